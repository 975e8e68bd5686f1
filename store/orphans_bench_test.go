package store_test

import (
	"context"
	"testing"
	"time"

	"lightbox/testsupport/seed"
	"lightbox/testsupport/testenv"
)

// BenchmarkOrphanCheck checks every key of a seeded project (seed.Size
// assets, each with an original, a thumbnail and a preview) and 1% more
// that no row names, as `lightbox blobs orphans` does: a NamedSet, each
// key looked up in it, the ones missing checked again in Postgres. The baseline is reading the same key columns into strings
// with a plain query, the least any check of them costs.
func BenchmarkOrphanCheck(b *testing.B) {
	env := testenv.New(b)
	ctx := context.Background()
	_, project := env.Project(b)
	n := seed.Size(b)
	seed.Fill(b, env, project, n)
	if _, err := env.DB.Exec(`INSERT INTO asset_files (asset_id, kind, blob_key, content_type, byte_size, checksum_sha256)
		SELECT a.id, k.kind, 'derived/' || a.id || '/' || k.kind || '.jpg', 'image/jpeg', 1000, a.checksum_sha256
		FROM assets a, (VALUES ('thumbnail'), ('preview')) AS k(kind) WHERE a.project_id = $1`, project); err != nil {
		b.Fatal(err)
	}
	lost := 3 * n / 100
	var keys []string
	if err := env.DB.Select(&keys, `SELECT blob_key FROM assets UNION ALL SELECT blob_key FROM asset_files
		UNION ALL SELECT 'derived/' || gen_random_uuid() || '/preview.jpg' FROM generate_series(1, $1)`, lost); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		start := time.Now()
		var plain []string
		if err := env.DB.Select(&plain, `SELECT blob_key FROM assets UNION ALL SELECT blob_key FROM asset_files`); err != nil {
			b.Fatal(err)
		}
		baseline := time.Since(start)

		start = time.Now()
		named, err := env.Store.NamedSet(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var missing []string
		for _, k := range keys {
			if !named.Has(k) {
				missing = append(missing, k)
			}
		}
		found := 0
		for i := 0; i < len(missing); i += 5000 {
			got, err := env.Store.UnnamedKeys(ctx, missing[i:min(i+5000, len(missing))])
			if err != nil {
				b.Fatal(err)
			}
			found += len(got)
		}
		ours := time.Since(start)
		if found != lost {
			b.Fatalf("found %d unnamed of %d keys, want %d", found, len(keys), lost)
		}
		b.ReportMetric(float64(len(keys))/ours.Seconds(), "keys/s")
		b.ReportMetric(ours.Seconds(), "check_s")
		b.ReportMetric(baseline.Seconds(), "plain_read_s")
		b.ReportMetric(ours.Seconds()/baseline.Seconds(), "ours/plain")
	}
}
