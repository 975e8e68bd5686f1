package worker_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// finalizeWithoutEnqueue records an uploaded asset and its ingest job the
// way finalize does, then stops: as if Redis refused the enqueue.
func (h *harness) finalizeWithoutEnqueue(project uuid.UUID, data []byte) (asset, job uuid.UUID) {
	h.t.Helper()
	return h.finalizeNamed(project, "a.jpg", data)
}

// finalizeNamed is finalizeWithoutEnqueue for a file called name.
func (h *harness) finalizeNamed(project uuid.UUID, name string, data []byte) (asset, job uuid.UUID) {
	h.t.Helper()
	asset = uuid.New()
	key := "originals/" + project.String() + "/" + asset.String()
	if _, err := h.blobs.Put(context.Background(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		h.t.Fatal(err)
	}
	res := h.env.Finalize(h.t, h.owner, project, testenv.Upload{ID: asset, Filename: name, Data: data, BlobKey: key})
	if len(res.Accepted) != 1 {
		h.t.Fatalf("finalize of %s accepted %d assets, want 1: %+v", name, len(res.Accepted), res.Assets)
	}
	return asset, res.Jobs[0]
}

func (h *harness) sweep() {
	h.t.Helper()
	if err := h.w.Handler().ProcessTask(context.Background(), tasks.NewSweep()); err != nil {
		h.t.Fatal(err)
	}
}

func TestSweepFailsExpiredUploadsAndDeletesTheirBytes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	ctx := context.Background()
	stale, fresh := uuid.New(), uuid.New()
	key := func(id uuid.UUID) string { return "originals/" + project.String() + "/" + id.String() }
	for id, expires := range map[uuid.UUID]time.Time{stale: time.Now().Add(-2 * time.Hour), fresh: time.Now().Add(5 * time.Minute)} {
		h.env.Store.AddPendingAssets(ctx, project, []store.NewAsset{{ID: id, Filename: "a.jpg", ContentType: "image/jpeg", ByteSize: 5, BlobKey: key(id)}}, expires)
		h.blobs.Put(ctx, key(id), bytes.NewReader([]byte("part")), 5)
	}
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

func TestSweepRemovesDayOldTemporaryBlobFiles(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	dir := filepath.Join(h.cfg.DataDir, "blobs", "originals", h.project().String())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abandoned, writing := filepath.Join(dir, ".upload-1"), filepath.Join(dir, ".upload-2")
	for _, p := range []string{abandoned, writing} {
		if err := os.WriteFile(p, []byte("part"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dayAgo := time.Now().Add(-25 * time.Hour)
	os.Chtimes(abandoned, dayAgo, dayAgo)
	h.sweep()

	if _, err := os.Stat(abandoned); err == nil {
		t.Fatal("a day-old temporary file was kept")
	}
	if _, err := os.Stat(writing); err != nil {
		t.Fatalf("an upload in progress lost its file: %v", err)
	}
}

// TestSweepDeletesDiscardedOriginalsOnceTheirURLExpires finalizes two
// copies of one photo: the second is a duplicate and its bytes are
// discarded. They are in storage again, as a late PUT to its S3 URL puts
// them back. While the URL lives the sweep leaves them; once it has
// expired, the sweep deletes them and forgets the key.
func TestSweepDeletesDiscardedOriginalsOnceTheirURLExpires(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1h"})
	ctx := context.Background()
	project := h.project()
	data := readCorpus(t, "photos/kite-2560x1600.jpg")
	var uploads []testenv.Upload
	for range 2 {
		id := uuid.New()
		key := blob.OriginalKey(project, id)
		if _, err := h.blobs.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
		uploads = append(uploads, testenv.Upload{ID: id, Filename: "kite.jpg", Data: data, BlobKey: key})
	}
	res := h.env.Finalize(t, h.owner, project, uploads...)
	if len(res.Discard) != 1 || res.Discard[0] != uploads[1].BlobKey {
		t.Fatalf("setup: discarded %v, want the second copy's key", res.Discard)
	}
	dup := uploads[1].BlobKey
	stored := func() bool {
		_, err := h.blobs.Stat(ctx, dup)
		return err == nil
	}

	h.sweep()
	if !stored() {
		t.Fatal("the sweep deleted a discarded original while its upload URL still lives")
	}
	if _, err := h.blobs.Stat(ctx, uploads[0].BlobKey); err != nil {
		t.Fatal("the original's bytes are gone")
	}

	h.env.Age(t, "blob_discards", "url_expires_at", 10*time.Minute, "blob_key = $1", dup)
	h.sweep()
	if stored() {
		t.Fatal("the sweep kept a discarded original whose URL has expired")
	}
	if n := h.count(`SELECT count(*) FROM blob_discards WHERE blob_key = $1`, dup); n != 0 {
		t.Fatal("the deleted key is still listed for deletion")
	}
	if _, err := h.blobs.Stat(ctx, uploads[0].BlobKey); err != nil {
		t.Fatal("the original's bytes are gone")
	}
}

// scheduleClusterRun schedules a cluster run of project that was due a
// minute ago and lets the sweep enqueue it, and returns its task's id.
func (h *harness) scheduleClusterRun(project uuid.UUID) string {
	h.t.Helper()
	run, err := h.env.Store.ScheduleCluster(context.Background(), project, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	h.env.Age(h.t, "cluster_runs", "scheduled_for", time.Minute, "project_id = $1", project)
	h.sweep()
	id := tasks.ClusterPayload{ProjectID: project, Run: run.Run}.TaskID()
	if _, err := h.in.GetTaskInfo("low", id); err != nil {
		h.t.Fatalf("cluster run of %s not enqueued: %v", project, err)
	}
	return id
}

// TestSweepPutsBackClusterRunsRedisLostOrAnOutageArchived: a waiting
// cluster run absorbs every later request of its project, so a task Redis
// lost, or one archived when its start failed through every retry, would
// keep the project from clustering again.
func TestSweepPutsBackClusterRunsRedisLostOrAnOutageArchived(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	lost, archived := h.project(), h.project()
	lostID, archivedID := h.scheduleClusterRun(lost), h.scheduleClusterRun(archived)
	if err := h.in.DeleteTask("low", lostID); err != nil {
		t.Fatal(err)
	}
	if err := h.in.ArchiveTask("low", archivedID); err != nil {
		t.Fatal(err)
	}
	if run, _ := h.env.Store.ScheduleCluster(ctx, lost, 0); run.New {
		t.Fatal("setup: a new request does not join the waiting run")
	}

	// A run due a minute ago may still be about to start.
	h.sweep()
	if _, err := h.in.GetTaskInfo("low", lostID); err == nil {
		t.Fatal("a recently due cluster run was enqueued again")
	}
	h.env.Age(t, "cluster_runs", "scheduled_for", 3*time.Minute, "")
	h.sweep()
	for _, id := range []string{lostID, archivedID} {
		info, err := h.in.GetTaskInfo("low", id)
		if err != nil || info.State != asynq.TaskStatePending {
			t.Fatalf("cluster run %s not put back: %v %v", id, info, err)
		}
	}
	h.sweep()
	if q, _ := h.in.GetQueueInfo("low"); q.Size != 2 {
		t.Fatalf("low queue has %d tasks after another sweep, want 2", q.Size)
	}

	// The run put back runs, and the project's next request schedules anew.
	info, _ := h.in.GetTaskInfo("low", lostID)
	if err := h.w.Handler().ProcessTask(ctx, asynq.NewTask(info.Type, info.Payload)); err != nil {
		t.Fatal(err)
	}
	if n := h.count(`SELECT count(*) FROM cluster_runs WHERE project_id = $1 AND done_run = run AND scheduled_for IS NULL`, lost); n != 1 {
		t.Fatal("the run put back did not run")
	}
	if run, _ := h.env.Store.ScheduleCluster(ctx, lost, 0); !run.New || run.Run != 2 {
		t.Fatalf("the next request: %+v, want a new run 2", run)
	}
}
