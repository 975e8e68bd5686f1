package testenv

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"lightbox/store"
)

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

// FinishJobs records every queued job of jobType in project run to
// success, as the worker does.
func (e *Env) FinishJobs(t testing.TB, project uuid.UUID, jobType string) {
	t.Helper()
	jobs, err := e.Store.Jobs(context.Background(), project, store.JobFilter{Status: store.JobQueued, Type: jobType}, nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) == 0 {
		t.Fatalf("no queued %s job in project %s to finish", jobType, project)
	}
	for _, j := range jobs.Items {
		e.FinishJob(t, j.ID)
	}
}
