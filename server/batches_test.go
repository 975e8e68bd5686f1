package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/jobs"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

func TestCancelRemovesWaitingAndStopsRunningWork(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	r, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg", "photos/storm.jpg"))
	batch := decode[queued](t, r).BatchID
	in := inspector(t, a.env)

	// One task waits for later (scheduled), one stays pending, and one is
	// picked up by a worker whose handler runs until its context ends.
	opt, _ := asynq.ParseRedisURI(a.env.RedisURL)
	client := asynq.NewClient(opt)
	defer client.Close()
	later := "ingest:" + ups[1].AssetID
	info, _ := in.GetTaskInfo("default", later)
	in.DeleteTask("default", later)
	if _, err := client.Enqueue(asynq.NewTask(info.Type, info.Payload), asynq.TaskID(later), asynq.ProcessIn(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if info, _ := in.GetTaskInfo("default", later); info.State != asynq.TaskStateScheduled {
		t.Fatalf("setup: %v", info.State)
	}
	started, stopped := make(chan string, 3), make(chan error, 3)
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: 1, Queues: map[string]int{"critical": 1}, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc(tasks.TypeIngest, func(ctx context.Context, t *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		started <- id
		<-ctx.Done()
		stopped <- ctx.Err()
		return ctx.Err()
	})
	// Move one task to its own queue so this worker takes exactly it.
	running := "ingest:" + ups[0].AssetID
	info, _ = in.GetTaskInfo("default", running)
	in.DeleteTask("default", running)
	if _, err := client.Enqueue(asynq.NewTask(info.Type, info.Payload), asynq.TaskID(running), asynq.Queue("critical")); err != nil {
		t.Fatal(err)
	}
	a.env.SetJobs(t, testenv.JobRow{Queue: "critical"}, "task_id = $1", running)
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	select {
	case <-started:
	case <-time.After(2 * time.Minute): // only bounds a hang
		t.Fatal("the worker did not start the task")
	}

	marked := func() bool {
		ok, err := jobs.MayBeCanceled(context.Background(), a.env.Redis, uuid.MustParse(project))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if marked() {
		t.Fatal("setup: the project is marked for cancels before any")
	}
	r = a.do("POST", "/v1/batches/"+batch+"/cancel", key, nil)
	expect(t, r, 200, "")
	// Workers now read the status of the project's jobs before running one.
	if !marked() {
		t.Fatal("the cancel did not mark the project for workers")
	}
	select {
	case err := <-stopped:
		if err == nil {
			t.Fatal("handler context ended without an error")
		}
	case <-time.After(2 * time.Minute): // only bounds a hang
		t.Fatal("the running task was not cancelled")
	}
	for _, u := range ups[1:] {
		if _, err := in.GetTaskInfo("default", "ingest:"+u.AssetID); err == nil {
			t.Fatalf("task of %s still queued after cancel", u.AssetID)
		}
	}
	b := a.batch(key, batch)
	if b.Batch.Status != "cancelled" {
		t.Fatalf("batch %+v", b.Batch)
	}
	for _, j := range b.Jobs {
		if j.Status != "canceled" {
			t.Fatalf("job %+v not canceled", j)
		}
	}
}

// A cancelled batch's places in its user's window go to the user's next
// batch at once, not at the next sweep (this app runs no worker and no
// sweep, so without the release its jobs would wait for good).
func TestCancelHandsTheBatchsPlacesToTheNextBatch(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{"BATCH_WINDOW": "2", "USER_WINDOW": "2"}})
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	r, _ := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg", "photos/storm.jpg"))
	first := decode[queued](t, r).BatchID
	r, _ = a.uploadAll(key, project, corpus(t, "odd/orientation-1.jpg", "odd/orientation-6.jpg"))
	next := decode[queued](t, r).BatchID
	queued := func(batch string) int {
		return a.count(`SELECT count(*) FROM jobs WHERE batch_id = $1 AND enqueued_at IS NOT NULL AND status = 'queued'`, batch)
	}
	if f, n := queued(first), queued(next); f != 2 || n != 0 {
		t.Fatalf("in the queue: %d of the first batch, %d of the next; want the window of 2 and none", f, n)
	}
	expect(t, a.do("POST", "/v1/batches/"+first+"/cancel", key, nil), 200, "")
	if n := queued(next); n != 2 {
		t.Fatalf("%d of the next batch in the queue after the cancel, want 2", n)
	}
	in := inspector(t, a.env)
	var ids []string
	if err := a.env.DB.Select(&ids, `SELECT task_id FROM jobs WHERE batch_id = $1`, next); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := in.GetTaskInfo("default", id); err != nil {
			t.Fatalf("task %s of the next batch: %v", id, err)
		}
	}
}

func TestRetryFailedJobsRunsArchivedTasksAgain(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	r, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg", "photos/storm.jpg"))
	batch := decode[queued](t, r).BatchID
	in := inspector(t, a.env)

	// As a worker leaves them: one done, two failed for good (archived).
	jobOf := map[string]uuid.UUID{}
	for _, j := range a.batch(key, batch).Jobs {
		jobOf[j.AssetID] = uuid.MustParse(j.ID)
	}
	a.env.FinishJob(t, jobOf[ups[0].AssetID])
	in.DeleteTask("default", "ingest:"+ups[0].AssetID)
	for _, u := range ups[1:] {
		if err := in.ArchiveTask("default", "ingest:"+u.AssetID); err != nil {
			t.Fatal(err)
		}
		a.env.FailJob(t, jobOf[u.AssetID], 4, "task_failed")
	}
	if b := a.batch(key, batch); b.Batch.Status != "partial" || b.Batch.Completed != 1 || b.Batch.Failed != 2 {
		t.Fatalf("before retrying: %+v", b.Batch)
	}

	// Retry one.
	failedJob := jobOf[ups[1].AssetID].String()
	expect(t, a.do("POST", "/v1/batches/"+batch+"/jobs/"+failedJob+"/retry", key, nil), 202, "")
	if info, err := in.GetTaskInfo("default", "ingest:"+ups[1].AssetID); err != nil || info.State != asynq.TaskStatePending {
		t.Fatalf("retried task %+v %v, want pending", info, err)
	}
	b := a.batch(key, batch)
	if b.Batch.Status != "running" || b.Batch.Failed != 1 || b.Batch.Completed != 1 {
		t.Fatalf("after retrying one: %+v", b.Batch)
	}
	// Retrying a job that is not failed is refused.
	expect(t, a.do("POST", "/v1/batches/"+batch+"/jobs/"+failedJob+"/retry", key, nil), 409, "job_not_failed")

	// Retry all: the other failed job; the task is run again, not duplicated.
	r = a.do("POST", "/v1/batches/"+batch+"/retry", key, nil)
	expect(t, r, 202, "")
	if n := len(r.json(t)["retriedJobs"].([]any)); n != 1 {
		t.Fatalf("retried %d jobs, want 1", n)
	}
	q, _ := in.GetQueueInfo("default")
	if q.Pending != 2 || q.Archived != 0 {
		t.Fatalf("queue after retry: %d pending, %d archived", q.Pending, q.Archived)
	}
	b = a.batch(key, batch)
	if b.Batch.Failed != 0 || b.Batch.Status != "running" {
		t.Fatalf("after retrying all: %+v", b.Batch)
	}
	if assetStatus := a.env.AssetStatus(t, uuid.MustParse(ups[2].AssetID)); assetStatus != "uploaded" {
		t.Fatalf("retried asset is %s, want uploaded", assetStatus)
	}
	bob := a.user("bob@example.org", false)
	expect(t, a.do("POST", "/v1/batches/"+batch+"/retry", bob, nil), 404, "not_found")
	expect(t, a.do("GET", "/v1/batches/"+batch, bob, nil), 404, "not_found")
}

func TestReprocessRunsAnArchivedTaskAgain(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	r, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg"))
	expect(t, r, 200, "")
	in := inspector(t, a.env)
	taskID := "ingest:" + ups[0].AssetID

	// While the task waits, reprocess points at it rather than adding one.
	r = a.do("POST", "/v1/assets/"+ups[0].AssetID+":reprocess", key, nil)
	expect(t, r, 202, "")
	firstJob := decode[queued](t, r).QueuedJobs[0]

	in.ArchiveTask("default", taskID)
	if err := a.env.Store.FailAsset(context.Background(), uuid.MustParse(ups[0].AssetID), "decode_failed", "it failed"); err != nil {
		t.Fatal(err)
	}
	r = a.do("POST", "/v1/assets/"+ups[0].AssetID+":reprocess", key, nil)
	expect(t, r, 202, "")
	if got := decode[queued](t, r).QueuedJobs[0]; got != firstJob {
		t.Fatalf("reprocess of an archived task made job %v, want the original %v", got, firstJob)
	}
	if info, err := in.GetTaskInfo("default", taskID); err != nil || info.State != asynq.TaskStatePending {
		t.Fatalf("task %+v %v", info, err)
	}
	// Once the task is gone (done), reprocess records a new job.
	in.DeleteTask("default", taskID)
	r = a.do("POST", "/v1/assets/"+ups[0].AssetID+":reprocess", key, nil)
	if got := decode[queued](t, r).QueuedJobs[0]; got == firstJob {
		t.Fatal("a finished task was not replaced by a new job")
	}
	expect(t, a.do("POST", "/v1/assets/"+ups[0].AssetID+":explode", key, nil), 404, "route_not_found")
}

// A photo fails; the user uploads the same file again, and the new asset
// is the project's original. The failed one cannot come back as a second
// live copy: retrying it alone says which asset holds its bytes, and
// retrying the batch runs its other failed jobs and names it.
func TestRetryOfAPhotoUploadedAgain(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	r, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))
	expect(t, r, 200, "")
	batch := decode[queued](t, r).BatchID
	in := inspector(t, a.env)
	jobOf := map[string]string{}
	for _, j := range a.batch(key, batch).Jobs {
		jobOf[j.AssetID] = j.ID
	}
	for _, u := range ups {
		if err := in.ArchiveTask("default", "ingest:"+u.AssetID); err != nil {
			t.Fatal(err)
		}
		a.env.FailJob(t, uuid.MustParse(jobOf[u.AssetID]), 4, "task_failed")
	}
	failed := ups[0].AssetID
	r, again := a.uploadAll(key, project, corpus(t, "photos/wood.jpg"))
	expect(t, r, 200, "")
	kept := again[0].AssetID
	if st := decode[finalized](t, r).Assets[0].Status; st != "uploaded" {
		t.Fatalf("the same bytes after a failure: %s, want a new original", r.body)
	}

	r = a.do("POST", "/v1/batches/"+batch+"/jobs/"+jobOf[failed]+"/retry", key, nil)
	expect(t, r, 409, "duplicate")
	if of := details(t, r)["duplicateOf"]; of != kept {
		t.Fatalf("retry names %v, want the asset uploaded again, %s", of, kept)
	}
	r = a.do("POST", "/v1/assets/"+failed+":reprocess", key, nil)
	expect(t, r, 409, "duplicate")

	r = a.do("POST", "/v1/batches/"+batch+"/retry", key, nil)
	expect(t, r, 202, "")
	var got struct {
		RetriedJobs []string
		Duplicates  []struct{ JobID, AssetID, DuplicateOf string }
	}
	json.Unmarshal(r.body, &got)
	if len(got.RetriedJobs) != 1 || got.RetriedJobs[0] != jobOf[ups[1].AssetID] ||
		len(got.Duplicates) != 1 || got.Duplicates[0].AssetID != failed || got.Duplicates[0].DuplicateOf != kept {
		t.Fatalf("retry of the batch: %s; want %s retried and %s named a duplicate of %s", r.body, jobOf[ups[1].AssetID], failed, kept)
	}
	r = a.do("GET", "/v1/assets/"+failed, key, nil)
	expect(t, r, 200, "")
	if f := r.json(t)["flags"].(map[string]any); f["status"] != "failed" || f["errorCode"] != "duplicate" || !strings.Contains(fmt.Sprint(f["errorMessage"]), kept) {
		t.Fatalf("the failed asset after the retry: %s; want failed, naming %s", r.body, kept)
	}
	if s := a.env.AssetStatus(t, uuid.MustParse(ups[1].AssetID)); s != "uploaded" {
		t.Fatalf("the other failed asset is %s after the retry, want uploaded", s)
	}
}

// Retrying one job names a job of the batch: any other is not found there,
// and only one of the batch that did not fail is refused as not failed.
func TestRetryJobOutsideTheBatchIsNotFound(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	first, _ := a.uploadAll(key, project, corpus(t, "photos/wood.jpg"))
	second, _ := a.uploadAll(key, project, corpus(t, "photos/dune.jpg"))
	batch := decode[queued](t, first).BatchID
	mine := decode[queued](t, first).QueuedJobs[0]
	theirs := decode[queued](t, second).QueuedJobs[0]
	retry := func(job string) reply { return a.do("POST", "/v1/batches/"+batch+"/jobs/"+job+"/retry", key, nil) }

	expect(t, retry("00000000-0000-0000-0000-000000000001"), 404, "not_found")
	expect(t, retry(theirs), 404, "not_found")
	expect(t, retry(mine), 409, "job_not_failed")
}
