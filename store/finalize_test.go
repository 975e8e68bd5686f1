package store_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// finalize accepts items in project, into batch when not nil, with their
// ingest jobs, as the server does.
func finalize(t *testing.T, env *testenv.Env, owner, project uuid.UUID, batch *uuid.UUID, items ...store.FinalizeItem) *store.FinalizeResult {
	t.Helper()
	var res *store.FinalizeResult
	env.Tx(t, func(tx *store.Store) (err error) {
		res, err = app.AcceptUploads(context.Background(), tx, owner, project, items, batch)
		return err
	})
	return res
}

func TestFinalizeAcceptsNewUploads(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	data := [][]byte{[]byte("one"), []byte("two")}
	ids := env.Upload(t, project, testenv.Upload{Data: data[0]}, testenv.Upload{Data: data[1]})

	res := finalize(t, env, owner, project, nil,
		store.FinalizeItem{AssetID: ids[0], Checksum: testenv.Checksum(data[0])},
		store.FinalizeItem{AssetID: ids[1], Checksum: testenv.Checksum(data[1])})
	if res.BatchID == nil || len(res.Accepted) != 2 || len(res.Jobs) != 2 || len(res.Discard) != 0 {
		t.Fatalf("result %+v", res)
	}
	for i, out := range res.Assets {
		if out.AssetID != ids[i] || out.Status != store.AssetUploaded || out.JobID == nil || *out.JobID != res.Jobs[i] || *out.BatchID != *res.BatchID {
			t.Fatalf("asset %d: %+v", i, out)
		}
		if a, _ := env.Store.AssetByID(ctx, ids[i]); a.Status != store.AssetUploaded || a.FinalizedAt == nil {
			t.Fatalf("asset %d row %+v", i, a)
		}
		q, err := env.Store.AssetAttestation(ctx, ids[i], "ingest")
		if err != nil || q.Status != store.AttestPending {
			t.Fatalf("asset %d attestation %+v %v", i, q, err)
		}
	}
	jobs, err := env.Store.BatchJobs(ctx, *res.BatchID)
	if err != nil || len(jobs) != 2 || jobs[0].Type != "asset:ingest" || jobs[0].Status != store.JobQueued || jobs[0].EnqueuedAt != nil {
		t.Fatalf("batch jobs %+v %v", jobs, err)
	}
	b, err := env.Store.Batch(ctx, owner, *res.BatchID)
	if err != nil || b.Kind != "upload" || b.Total != 2 || b.Status != "running" {
		t.Fatalf("batch %+v %v", b, err)
	}
}

// Downloads finalize into their import's batch as they finish: into an
// ended batch they reopen it, into a cancelled one the photo is kept and its
// ingest is canceled with the batch's other work instead of running.
func TestFinalizeIntoABatchKeepsItCancelled(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	first := env.Finalize(t, owner, project, testenv.Upload{Data: []byte("one")})
	batch := *first.BatchID
	if b := env.FinishJob(t, first.Jobs[0]); b.Status != "completed" {
		t.Fatalf("batch %s after its only job, want completed", b.Status)
	}
	into := func(data string) *store.FinalizeResult {
		t.Helper()
		ids := env.Upload(t, project, testenv.Upload{Data: []byte(data)})
		return finalize(t, env, owner, project, &batch, store.FinalizeItem{AssetID: ids[0], Checksum: testenv.Checksum([]byte(data))})
	}
	if res := into("two"); len(res.Accepted) != 1 {
		t.Fatalf("finalize into an ended batch: %+v", res)
	}
	if b, _ := env.Store.Batch(ctx, owner, batch); b.Status != "running" || b.Total != 2 || b.CompletedAt != nil {
		t.Fatalf("ended batch after a new photo: %+v, want running with 2", b)
	}

	if _, _, err := env.Store.CancelBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	res := into("three")
	if len(res.Jobs) != 1 || res.Assets[0].Status != store.AssetUploaded {
		t.Fatalf("finalize into a cancelled batch: %+v, want the photo kept", res)
	}
	if j, err := env.Store.JobByID(ctx, res.Jobs[0]); err != nil || j.Status != store.JobCanceled {
		t.Fatalf("its ingest job %+v %v, want canceled", j, err)
	}
	if b, _ := env.Store.Batch(ctx, owner, batch); b.Status != "cancelled" || b.Total != 3 || b.CompletedAt == nil {
		t.Fatalf("cancelled batch after a new photo: %+v, want still cancelled with 3", b)
	}
}

func TestFinalizeSecondCallRecordsNothingAndAnswersTheSame(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	data := []byte("once")
	id := env.Upload(t, project, testenv.Upload{Data: data})[0]
	item := store.FinalizeItem{AssetID: id, Checksum: testenv.Checksum(data)}

	first := finalize(t, env, owner, project, nil, item)
	second := finalize(t, env, owner, project, nil, item)
	if len(second.Accepted) != 0 {
		t.Fatalf("second call accepted %+v again", second.Accepted)
	}
	if !reflect.DeepEqual(first.Assets, second.Assets) || !reflect.DeepEqual(first.Jobs, second.Jobs) || *first.BatchID != *second.BatchID {
		t.Fatalf("answers differ:\n%+v\n%+v", first, second)
	}
	jobs, err := env.Store.AssetJobs(ctx, id)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("%d jobs for the asset, want 1 (%v)", len(jobs), err)
	}
	if c, _ := env.Store.AttestationQueueCounts(ctx); c[store.AttestPending] != 1 {
		t.Fatalf("attestation queue %v, want one item", c)
	}
}

func TestFinalizeMarksDuplicates(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	data := []byte("same bytes")
	first := env.Finalize(t, owner, project, testenv.Upload{Data: data}).Assets[0].AssetID

	// One already accepted, and two copies in one later call.
	ids := env.Upload(t, project, testenv.Upload{Data: data}, testenv.Upload{Data: data})
	res := finalize(t, env, owner, project, nil,
		store.FinalizeItem{AssetID: ids[0], Checksum: testenv.Checksum(data)},
		store.FinalizeItem{AssetID: ids[1], Checksum: testenv.Checksum(data)})
	for i, out := range res.Assets {
		if out.Status != store.AssetDuplicate || out.DuplicateOf == nil || *out.DuplicateOf != first || out.JobID != nil {
			t.Fatalf("asset %d: %+v", i, out)
		}
	}
	if len(res.Accepted) != 0 || res.BatchID != nil || len(res.Discard) != 2 {
		t.Fatalf("result %+v", res)
	}
	if a, _ := env.Store.AssetByID(ctx, ids[0]); a.Status != store.AssetDuplicate || *a.DuplicateOf != first {
		t.Fatalf("row %+v", a)
	}

	// The first of identical files in one call is the original.
	other := []byte("new twins")
	twins := env.Upload(t, project, testenv.Upload{Data: other}, testenv.Upload{Data: other})
	res = finalize(t, env, owner, project, nil,
		store.FinalizeItem{AssetID: twins[0], Checksum: testenv.Checksum(other)},
		store.FinalizeItem{AssetID: twins[1], Checksum: testenv.Checksum(other)})
	if res.Assets[0].Status != store.AssetUploaded || res.Assets[1].Status != store.AssetDuplicate || *res.Assets[1].DuplicateOf != twins[0] {
		t.Fatalf("twins %+v", res.Assets)
	}
}

func TestFinalizeFailsAChecksumMismatch(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	id := env.Upload(t, project, testenv.Upload{Data: []byte("what arrived"), BlobKey: "k/1"})[0]

	item := store.FinalizeItem{AssetID: id, Checksum: testenv.Checksum([]byte("what was meant"))}
	res := finalize(t, env, owner, project, nil, item)
	out := res.Assets[0]
	if out.Status != store.AssetFailed || out.ErrorCode != "checksum_mismatch" || !strings.Contains(out.ErrorMessage, testenv.Checksum([]byte("what arrived"))) {
		t.Fatalf("outcome %+v", out)
	}
	if len(res.Accepted) != 0 || len(res.Discard) != 1 || res.Discard[0] != "k/1" {
		t.Fatalf("result %+v", res)
	}
	if a, _ := env.Store.AssetByID(ctx, id); a.Status != store.AssetFailed || *a.ErrorCode != "checksum_mismatch" {
		t.Fatalf("row %+v", a)
	}
	// Asked again, it says the same and discards nothing more.
	again := finalize(t, env, owner, project, nil, item)
	if again.Assets[0].Status != store.AssetFailed || again.Assets[0].ErrorCode != "checksum_mismatch" || len(again.Discard) != 0 {
		t.Fatalf("second answer %+v", again)
	}
}

func TestFinalizeRefusesMissingBytesAndForeignAssets(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	waiting := uuid.New()
	if err := env.Store.AddPendingAssets(ctx, project, []store.NewAsset{{ID: waiting, Filename: "a.jpg", ContentType: "image/jpeg", ByteSize: 1, BlobKey: "k"}}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, elsewhere := env.Project(t)
	foreign := env.Upload(t, elsewhere, testenv.Upload{Data: []byte("x")})[0]

	res := finalize(t, env, owner, project, nil,
		store.FinalizeItem{AssetID: waiting, Checksum: testenv.Checksum([]byte("x"))},
		store.FinalizeItem{AssetID: foreign, Checksum: testenv.Checksum([]byte("x"))})
	if out := res.Assets[0]; out.Status != store.AssetPendingUpload || out.ErrorCode != "upload_missing" {
		t.Fatalf("missing bytes: %+v", out)
	}
	if out := res.Assets[1]; out.Status != "failed" || out.ErrorCode != "not_found" {
		t.Fatalf("foreign asset: %+v", out)
	}
	if a, _ := env.Store.AssetByID(ctx, foreign); a.Status != store.AssetPendingUpload {
		t.Fatalf("another project's asset changed: %+v", a)
	}

	// Another user's project is not found at all.
	if _, err := env.Store.FinalizeUploads(ctx, owner, elsewhere, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("finalize in another user's project: %v", err)
	}
}
