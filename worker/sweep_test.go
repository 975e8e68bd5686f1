package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"

	"lightbox/internal/dispatch"
	"lightbox/store"
	"lightbox/tasks"
)

// finalizeWithoutEnqueue records an uploaded asset and its ingest job the
// way finalize does, then stops: as if Redis refused the enqueue.
func (h *harness) finalizeWithoutEnqueue(project uuid.UUID, data []byte) (asset, job uuid.UUID) {
	h.t.Helper()
	ctx := context.Background()
	asset = uuid.New()
	key := "originals/" + project.String() + "/" + asset.String()
	if err := h.env.Store.AddPendingAssets(ctx, project, []store.NewAsset{{ID: asset, Filename: "a.jpg", ContentType: "image/jpeg",
		ByteSize: int64(len(data)), BlobKey: key}}, time.Now().Add(time.Minute)); err != nil {
		h.t.Fatal(err)
	}
	info, err := h.blobs.Put(ctx, key, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.env.Store.InTx(ctx, func(tx *sqlx.Tx) error { return store.RecordUpload(ctx, tx, asset, info.SHA256, info.Size) }); err != nil {
		h.t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	res, err := h.env.Store.FinalizeUploads(ctx, h.owner, project, []store.FinalizeItem{{AssetID: asset, Checksum: hex.EncodeToString(sum[:])}},
		store.FinalizeOptions{Spec: dispatch.IngestJob(project)})
	if err != nil {
		h.t.Fatal(err)
	}
	return asset, res.NewJobs[0].ID
}

func (h *harness) sweep() {
	h.t.Helper()
	if err := h.w.Handler().ProcessTask(context.Background(), tasks.NewSweep()); err != nil {
		h.t.Fatal(err)
	}
}

func TestSweepEnqueuesWorkWhoseEnqueueWasLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	asset, job := h.finalizeWithoutEnqueue(project, []byte("jpeg bytes"))

	// Fresh work is left alone: finalize may still be enqueueing it.
	h.sweep()
	if _, err := h.in.GetTaskInfo("default", tasks.IngestID(asset)); err == nil {
		t.Fatal("sweep enqueued fresh work")
	}

	h.exec("UPDATE jobs SET created_at = now() - interval '1 minute'")
	h.sweep()
	info, err := h.in.GetTaskInfo("default", tasks.IngestID(asset))
	if err != nil {
		t.Fatalf("lost ingest not enqueued: %v", err)
	}
	p, _ := tasks.Decode[tasks.IngestPayload](asynq.NewTask(info.Type, info.Payload))
	if p.JobID != job || p.AssetID != asset {
		t.Fatalf("payload %+v", p)
	}
	if n := h.count("SELECT count(*) FROM jobs WHERE enqueued_at IS NOT NULL"); n != 1 {
		t.Fatalf("%d jobs marked enqueued", n)
	}

	// Sweeping again changes nothing: still one task.
	h.sweep()
	if q, _ := h.in.GetQueueInfo("default"); q.Size != 1 {
		t.Fatalf("default queue has %d tasks after a second sweep", q.Size)
	}
}

func TestSweepReenqueuesAStalledUploadWhoseTaskVanished(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	asset, _ := h.finalizeWithoutEnqueue(project, []byte("other bytes"))
	h.exec("UPDATE jobs SET created_at = now() - interval '1 minute'")
	h.sweep()

	// Redis loses the task (say, a restart without persistence).
	if err := h.in.DeleteTask("default", tasks.IngestID(asset)); err != nil {
		t.Fatal(err)
	}
	h.sweep()
	if _, err := h.in.GetTaskInfo("default", tasks.IngestID(asset)); err == nil {
		t.Fatal("a recently updated asset was re-enqueued")
	}
	h.exec("UPDATE assets SET updated_at = now() - interval '3 minutes'")
	h.sweep()
	if _, err := h.in.GetTaskInfo("default", tasks.IngestID(asset)); err != nil {
		t.Fatalf("stalled asset not re-enqueued: %v", err)
	}
}

func TestSweepFailsExpiredUploadsAndDeletesTheirBytes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	ctx := context.Background()
	stale, fresh := uuid.New(), uuid.New()
	key := func(id uuid.UUID) string { return "originals/" + project.String() + "/" + id.String() }
	for _, id := range []uuid.UUID{stale, fresh} {
		h.env.Store.AddPendingAssets(ctx, project, []store.NewAsset{{ID: id, Filename: "a.jpg", ContentType: "image/jpeg", ByteSize: 5, BlobKey: key(id)}}, time.Now().Add(5*time.Minute))
		h.blobs.Put(ctx, key(id), bytes.NewReader([]byte("part")), 5)
	}
	h.exec("UPDATE assets SET upload_expires_at = now() - interval '2 hours' WHERE id = $1", stale)
	h.sweep()

	a, _ := h.env.Store.AssetByID(ctx, stale)
	if a.Status != "failed" || a.ErrorCode == nil || *a.ErrorCode != "upload_expired" {
		t.Fatalf("stale upload: status %s code %v", a.Status, a.ErrorCode)
	}
	if _, err := h.blobs.Stat(ctx, key(stale)); err == nil {
		t.Fatal("the expired upload's partial blob was kept")
	}
	if a, _ := h.env.Store.AssetByID(ctx, fresh); a.Status != "pending_upload" {
		t.Fatalf("a live upload was touched: %s", a.Status)
	}
	if _, err := h.blobs.Stat(ctx, key(fresh)); err != nil {
		t.Fatal("a live upload's bytes were deleted")
	}
}
