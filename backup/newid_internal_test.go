package backup

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"lightbox/blob"
	"lightbox/testsupport/testenv"
)

// TestNewIDClaimsItsName: backups begun in the same second, as from
// several machines at once, each get a name of their own, in a folder
// and in a bucket, and a name some backup's files hold is passed over.
func TestNewIDClaimsItsName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	when := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		loc  func(t *testing.T) (Location, blob.S3Config)
	}{
		{"folder", func(t *testing.T) (Location, blob.S3Config) { return Location{Dir: t.TempDir()}, blob.S3Config{} }},
		{"bucket", func(t *testing.T) (Location, blob.S3Config) {
			cfg := testenv.S3(t)
			return Location{Bucket: cfg.Bucket, Prefix: "nightly/"}, cfg
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			loc, cfg := c.loc(t)
			tg, err := OpenTarget(ctx, loc, cfg, true)
			if err != nil {
				t.Fatal(err)
			}
			// A backup of that second is there already.
			if _, err := tg.Put(ctx, backupDir("20261130T030000Z")+"db.dump", bytes.NewReader([]byte("dump")), 4, ""); err != nil {
				t.Fatal(err)
			}
			const runs = 6
			ids := make([]string, runs)
			errs := make([]error, runs)
			var wg sync.WaitGroup
			for i := range runs {
				wg.Go(func() { ids[i], errs[i] = newID(ctx, tg, when) })
			}
			wg.Wait()
			seen := map[string]bool{}
			for i, id := range ids {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if seen[id] || id == "20261130T030000Z" || !strings.HasPrefix(id, "20261130T030000Z-") {
					t.Errorf("names %v: %s given twice, or the existing backup's", ids, id)
				}
				seen[id] = true
				// Each name's folder holds its claim alone.
				var keys []string
				if err := tg.List(ctx, backupDir(id), func(i blob.Info) error { keys = append(keys, i.Key); return nil }); err != nil {
					t.Fatal(err)
				}
				if len(keys) != 1 || !strings.HasPrefix(keys[0], backupDir(id)+"claim-") {
					t.Errorf("%s holds %v, want its one claim", id, keys)
				}
			}
		})
	}
}
