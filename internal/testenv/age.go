package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"

	"lightbox/store"
)

// Age sets column of the rows of table that where selects (every row when
// where is empty) to d before now, as if written, claimed or expired that
// long ago. The service reads Postgres's clock (now()), so time passes for
// a test only this way. Rows that where misses fail the test: an ageing
// that ages nothing would let the test pass for the wrong reason.
func (e *Env) Age(t testing.TB, table, column string, d time.Duration, where string, args ...any) {
	t.Helper()
	q := fmt.Sprintf(`UPDATE %s SET %s = now() - make_interval(secs => $%d)`,
		pq.QuoteIdentifier(table), pq.QuoteIdentifier(column), len(args)+1)
	if where != "" {
		q += " WHERE " + where
	}
	res, err := e.DB.ExecContext(context.Background(), q, append(args, d.Seconds())...)
	if err != nil {
		t.Fatalf("age %s.%s: %v", table, column, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatalf("age %s.%s: no row where %s %v", table, column, where, args)
	}
}

// AssetsIn finalizes one new file of project for each status given and
// brings each to its status through the store, as the worker does:
// uploaded, cull (ingested), search (embedded), ai (clustered) or failed.
// It returns their ids in the order given.
func (e *Env) AssetsIn(t testing.TB, owner, project uuid.UUID, statuses ...string) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	res := e.Finalize(t, owner, project, Files(len(statuses))...)
	ids := make([]uuid.UUID, len(statuses))
	var clustered []uuid.UUID
	for i, status := range statuses {
		id := res.Assets[i].AssetID
		ids[i] = id
		switch status {
		case store.AssetUploaded:
		case store.AssetFailed:
			if err := e.Store.FailAsset(ctx, id, "decode_failed", "it failed"); err != nil {
				t.Fatal(err)
			}
		case store.AssetCull, store.AssetSearch, store.AssetAI:
			out := store.IngestOutput{AssetID: id, Width: 100, Height: 80, EXIF: json.RawMessage(`{}`),
				Quality: json.RawMessage(`{}`), PHash: uint64(i), HashAlgorithm: "test"}
			if err := e.Store.SaveIngest(ctx, out); err != nil {
				t.Fatal(err)
			}
			if status == store.AssetCull {
				continue
			}
			if _, err := e.Store.SaveEmbedding(ctx, id, "test-model", []float32{1, float32(i)}); err != nil {
				t.Fatal(err)
			}
			if status == store.AssetAI {
				clustered = append(clustered, id)
			}
		default:
			t.Fatalf("AssetsIn: no builder for status %q", status)
		}
	}
	if len(clustered) > 0 {
		run := e.StartClusterRun(t, project)
		if _, stored, err := e.Store.ReplaceClusters(ctx, project, run, nil, clustered); !stored || err != nil {
			t.Fatalf("cluster run %d: stored %v, %v", run, stored, err)
		}
	}
	for i, id := range ids {
		if got := e.AssetStatus(t, id); got != statuses[i] {
			t.Fatalf("AssetsIn: asset %d is %s, want %s", i, got, statuses[i])
		}
	}
	return ids
}
