package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// batchOf finalizes n distinct files as one batch and returns it with its jobs.
func batchOf(t *testing.T, env *testenv.Env, owner, project uuid.UUID, n int) (uuid.UUID, []uuid.UUID) {
	t.Helper()
	res := env.Finalize(t, owner, project, testenv.Files(n)...)
	return *res.BatchID, res.Jobs
}

func TestJobStateTransitions(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	_, ids := batchOf(t, env, owner, project, 1)
	id := ids[0]

	j := env.RecordJob(t, store.JobUpdate{ID: id, Status: store.JobRunning, Attempt: 1})
	if j == nil || j.Status != store.JobRunning || j.Attempt != 1 || j.EnqueuedAt == nil {
		t.Fatalf("started: %+v", j)
	}
	next := time.Now().Add(time.Minute).UTC().Truncate(time.Microsecond)
	j = env.RecordJob(t, store.JobUpdate{ID: id, Status: store.JobQueued, Attempt: 1, NextRun: next, Code: "timeout", Message: "took too long"})
	if j == nil || j.Status != store.JobQueued || j.NextRunAt == nil || !j.NextRunAt.Equal(next) || *j.ErrorCode != "timeout" {
		t.Fatalf("retrying: %+v", j)
	}
	j = env.RecordJob(t, store.JobUpdate{ID: id, Status: store.JobRunning, Attempt: 2})
	if j == nil || j.Status != store.JobRunning || j.Attempt != 2 || j.NextRunAt != nil || j.ErrorCode != nil {
		t.Fatalf("started again: %+v", j)
	}
	j, b, err := env.Store.JobFinished(ctx, id, store.JobDone, "", "")
	if err != nil || j.Status != store.JobDone || j.Progress != 1 {
		t.Fatalf("finished: %+v %v", j, err)
	}
	if b == nil || b.Status != "completed" || b.Completed != 1 || b.CompletedAt == nil {
		t.Fatalf("batch after the only job finished: %+v", b)
	}
	if j := env.RecordJob(t, store.JobUpdate{ID: uuid.New(), Status: store.JobRunning, Attempt: 1}); j != nil {
		t.Fatalf("starting an unknown job wrote %+v", j)
	}
}

func TestBatchRecountFollowsItsJobs(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	batch, ids := batchOf(t, env, owner, project, 3)

	b := env.FinishJob(t, ids[0])
	if b.Status != "running" || b.Completed != 1 || b.Failed != 0 || b.CompletedAt != nil {
		t.Fatalf("one of three done: %+v", b)
	}
	env.FailJob(t, ids[1], 3, "decode_failed")
	b = env.FailJob(t, ids[2], 3, "decode_failed")
	if b.Status != "partial" || b.Completed != 1 || b.Failed != 2 || b.CompletedAt == nil {
		t.Fatalf("one done, two failed: %+v", b)
	}
	// A task that runs twice cannot make the counters drift.
	if _, b, err := env.Store.JobFinished(ctx, ids[0], store.JobDone, "", ""); err != nil || b.Completed != 1 {
		t.Fatalf("finishing a job twice: %+v %v", b, err)
	}
	failed, err := env.Store.FailedJobs(ctx, batch, nil)
	if err != nil || len(failed) != 2 {
		t.Fatalf("failed ids %+v %v", failed, err)
	}
	if one, _ := env.Store.FailedJobs(ctx, batch, &ids[2]); len(one) != 1 || one[0].ID != ids[2] {
		t.Fatalf("one failed job: %+v", one)
	}
	if env.AssetStatus(t, *failed[0].AssetID) != store.AssetFailed {
		t.Fatal("a failed ingest left its asset alive")
	}

	// All failed is a failed batch.
	_, solo := batchOf(t, env, owner, project, 1)
	if b := env.FailJob(t, solo[0], 1, "x"); b.Status != "failed" {
		t.Fatalf("batch whose only job failed: %+v", b)
	}
}

func TestCancelBatch(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	batch, ids := batchOf(t, env, owner, project, 3)
	env.FinishJob(t, ids[0])
	env.RecordJob(t, store.JobUpdate{ID: ids[1], Status: store.JobRunning, Attempt: 1})

	canceled, b, err := env.Store.CancelBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(canceled) != 2 || b.Status != "cancelled" || b.Completed != 1 || b.CompletedAt == nil {
		t.Fatalf("cancel: %d ids, batch %+v", len(canceled), b)
	}
	for _, j := range canceled {
		if j.Status != store.JobCanceled || j.ID == ids[0] {
			t.Fatalf("canceled %+v", j)
		}
	}
	// The running attempt ends, but its job stays canceled and so does the batch.
	if _, _, err := env.Store.JobFinished(ctx, ids[1], store.JobDone, "", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("finishing a canceled job: %v", err)
	}
	if j := env.RecordJob(t, store.JobUpdate{ID: ids[2], Status: store.JobRunning, Attempt: 1}); j != nil {
		t.Fatalf("starting a canceled job wrote %+v", j)
	}
	if j, err := env.Store.JobByID(ctx, ids[2]); err != nil || j.Status != store.JobCanceled {
		t.Fatalf("a canceled job after a start: %+v %v", j, err)
	}
	if b, _ := env.Store.Batch(ctx, owner, batch); b.Status != "cancelled" {
		t.Fatalf("batch %+v", b)
	}
	// A second cancel finds nothing left to cancel.
	if again, _, err := env.Store.CancelBatch(ctx, batch); err != nil || len(again) != 0 {
		t.Fatalf("second cancel: %d ids, %v", len(again), err)
	}
}

func TestReprocessAndRequeue(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	batch, ids := batchOf(t, env, owner, project, 2)
	env.FinishJob(t, ids[0])
	env.FailJob(t, ids[1], 4, "task_failed")
	failed, _ := env.Store.JobByID(ctx, ids[1])
	asset := *failed.AssetID

	// Running a failed job again puts it, its asset and its batch back in play.
	if err := env.Store.RequeueJob(ctx, ids[1], true); err != nil {
		t.Fatal(err)
	}
	j, _ := env.Store.JobByID(ctx, ids[1])
	if j.Status != store.JobQueued || j.ErrorCode != nil || j.EnqueuedAt != nil {
		t.Fatalf("requeued job %+v", j)
	}
	if s := env.AssetStatus(t, asset); s != store.AssetUploaded {
		t.Fatalf("asset of a requeued job is %s", s)
	}
	if b, _ := env.Store.Batch(ctx, owner, batch); b.Status != "running" || b.Failed != 0 || b.Completed != 1 || b.CompletedAt != nil {
		t.Fatalf("batch of a requeued job %+v", b)
	}
	if err := env.Store.RequeueJob(ctx, uuid.New(), true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("requeue of an unknown job: %v", err)
	}

	// Reprocess puts a failed asset back for its ingest to run again.
	env.FailJob(t, ids[1], 1, "task_failed")
	a, err := env.Store.AssetByID(ctx, asset)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Store.Reprocess(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a, _ := env.Store.AssetByID(ctx, asset); a.Status != store.AssetUploaded || a.ErrorCode != nil {
		t.Fatalf("reprocessed asset %+v", a)
	}
}

func TestAdmissibleJobsKeepBatchAndUserCaps(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	first, _ := batchOf(t, env, owner, project, 5)
	second, _ := batchOf(t, env, owner, project, 5)
	later := time.Now().Add(time.Minute)
	w := store.QueueCaps{Batch: 2, User: 3}
	mine := store.UserQueue{User: owner, Queue: tasks.QueueDefault}
	release := func(sh store.UserQueue, w store.QueueCaps) []store.Job {
		t.Helper()
		jobs, err := env.Store.AdmissibleJobs(ctx, sh, later, w)
		if err != nil {
			t.Fatal(err)
		}
		var ids []uuid.UUID
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
		if _, err := env.Store.ClaimEnqueue(ctx, ids); err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	of := func(jobs []store.Job, batch uuid.UUID) (n int) {
		for _, j := range jobs {
			if *j.BatchID == batch {
				n++
			}
		}
		return n
	}

	// The user's window of 3 takes the older batch's window of 2 first.
	got := release(mine, w)
	if len(got) != 3 || of(got, first) != 2 || of(got, second) != 1 {
		t.Fatalf("first release: %d jobs, %d of the first batch, %d of the second", len(got), of(got, first), of(got, second))
	}
	if more := release(mine, w); len(more) != 0 {
		t.Fatalf("released %d more into full windows", len(more))
	}
	// A job that ends makes room for one, from the oldest batch with room.
	env.FinishJob(t, got[0].ID)
	if more := release(mine, w); len(more) != 1 || *more[0].BatchID != *got[0].BatchID {
		t.Fatalf("released %d after one ended, want 1 of its batch", len(more))
	}
	// Another user's batches, and the user's jobs in another queue, have
	// windows of their own.
	other, theirs := env.Project(t)
	batchOf(t, env, other, theirs, 4)
	if got := release(store.UserQueue{User: other, Queue: tasks.QueueDefault}, w); len(got) != 2 {
		t.Fatalf("released %d of another user's batch, want its window of 2", len(got))
	}
	e := &store.Export{ID: uuid.New(), ProjectID: project, UserID: owner, Preset: "web", Settings: json.RawMessage(`{}`)}
	env.Tx(t, func(tx *store.Store) error { return app.RecordExport(ctx, tx, e) })
	recorded, err := env.Store.JobByID(ctx, *e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	shares, outside, err := env.Store.UserQueuesOf(ctx, []store.Job{got[0], *recorded})
	if err != nil || len(shares) != 2 || len(outside) != 0 || !slices.Contains(shares, store.UserQueue{User: owner, Queue: tasks.QueueCritical}) {
		t.Fatalf("shares of a default and a critical job: %v, %v", shares, err)
	}
	if got := release(store.UserQueue{User: owner, Queue: tasks.QueueCritical}, w); len(got) != 1 || got[0].ID != *e.JobID {
		t.Fatalf("released %d with the user's default queue full, want the export", len(got))
	}
	if waiting, err := env.Store.WaitingUserQueues(ctx, later, 10); err != nil || len(waiting) != 2 {
		t.Fatalf("shares with waiting jobs: %v, %v", waiting, err)
	}
	// Recorded after cutoff, none; without windows, every waiting job.
	if none, err := env.Store.AdmissibleJobs(ctx, mine, time.Now().Add(-time.Minute), store.QueueCaps{}); err != nil || len(none) != 0 {
		t.Fatalf("released %d jobs recorded after the cutoff: %v", len(none), err)
	}
	if all := release(mine, store.QueueCaps{}); len(all) != 10-4 {
		t.Fatalf("released %d without windows, want the 6 waiting", len(all))
	}
}

// Jobs of one batch ending at once, as on a worker with several slots,
// leave the batch counting every one of them.
func TestBatchCountsJobsThatEndTogether(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	batch, ids := batchOf(t, env, owner, project, 40)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := env.Store.JobFinished(ctx, id, store.JobDone, "", ""); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	b, err := env.Store.Batch(ctx, owner, batch)
	if err != nil {
		t.Fatal(err)
	}
	if b.Completed != len(ids) || b.Status != "completed" {
		t.Fatalf("after %d jobs ended together the batch says %d completed, %s", len(ids), b.Completed, b.Status)
	}
}

func TestRecordJobStatesWritesManyAtOnce(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	batch, ids := batchOf(t, env, owner, project, 4)
	otherBatch, other := batchOf(t, env, owner, project, 1)

	started := []store.JobUpdate{{ID: ids[0], Status: store.JobRunning, Attempt: 1}, {ID: ids[1], Status: store.JobRunning, Attempt: 2}}
	jobs, batches, err := env.Store.RecordJobStates(ctx, started)
	if err != nil || len(jobs) != 2 || len(batches) != 0 {
		t.Fatalf("started: %d jobs, %d batches, %v", len(jobs), len(batches), err)
	}
	for _, j := range jobs {
		if j.Status != store.JobRunning || j.EnqueuedAt == nil || (j.ID == ids[1]) != (j.Attempt == 2) {
			t.Fatalf("started: %+v", j)
		}
	}

	next := time.Now().Add(time.Minute).UTC().Truncate(time.Microsecond)
	ended := []store.JobUpdate{
		{ID: ids[0], Status: store.JobDone, Attempt: 1},
		{ID: ids[1], Status: store.JobQueued, Attempt: 2, Code: "timeout", Message: "took too long", NextRun: next},
		{ID: ids[2], Status: store.JobFailed, Attempt: 3, Code: "decode_failed", Message: "not a photo", FailAsset: true},
		{ID: other[0], Status: store.JobDone, Attempt: 1},
		{ID: uuid.New(), Status: store.JobDone, Attempt: 1},
	}
	env.SetJobs(t, testenv.JobRow{Status: store.JobCanceled}, "id = $1", ids[3])
	ended = append(ended, store.JobUpdate{ID: ids[3], Status: store.JobDone, Attempt: 1})
	jobs, batches, err = env.Store.RecordJobStates(ctx, ended)
	if err != nil || len(jobs) != 4 {
		t.Fatalf("ended: %d jobs, %v", len(jobs), err)
	}
	got := map[uuid.UUID]store.Job{}
	for _, j := range jobs {
		got[j.ID] = j
	}
	if j := got[ids[0]]; j.Status != store.JobDone || j.Progress != 1 || j.ErrorCode != nil {
		t.Fatalf("done: %+v", j)
	}
	if j := got[ids[1]]; j.Status != store.JobQueued || j.NextRunAt == nil || !j.NextRunAt.Equal(next) || *j.ErrorCode != "timeout" {
		t.Fatalf("retrying: %+v", j)
	}
	if j := got[ids[2]]; j.Status != store.JobFailed || *j.ErrorCode != "decode_failed" || env.AssetStatus(t, *j.AssetID) != store.AssetFailed {
		t.Fatalf("failed: %+v", j)
	}
	if j, _ := env.Store.JobByID(ctx, ids[3]); j.Status != store.JobCanceled {
		t.Fatalf("a canceled job did not stay canceled: %+v", j)
	}
	if len(batches) != 2 {
		t.Fatalf("%d batches recounted, want 2", len(batches))
	}
	for _, b := range batches {
		switch b.ID {
		case batch:
			if b.Status != "running" || b.Completed != 1 || b.Failed != 1 {
				t.Fatalf("batch: %+v", b)
			}
		case otherBatch:
			if b.Status != "completed" || b.Completed != 1 {
				t.Fatalf("other batch: %+v", b)
			}
		default:
			t.Fatalf("batch %s recounted", b.ID)
		}
	}
	if st, err := env.Store.JobStatus(ctx, ids[3]); err != nil || st != store.JobCanceled {
		t.Fatalf("status: %q %v", st, err)
	}
	if _, err := env.Store.JobStatus(ctx, uuid.New()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("status of an unknown job: %v", err)
	}
}

// A failed asset whose bytes were uploaded again as another asset cannot
// come back by any path (a retry, a reprocess, an ingest run again from
// Asynqmon): each says which asset holds them, and changes nothing.
func TestFailedAssetUploadedAgainStaysFailed(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	data := []byte("the same bytes " + uuid.NewString())
	first := env.Finalize(t, owner, project, testenv.Upload{Data: data})
	failed, job := first.Assets[0].AssetID, first.Jobs[0]
	env.FailJob(t, job, 4, "task_failed")
	kept := env.Finalize(t, owner, project, testenv.Upload{Data: data}).Assets[0].AssetID

	isDup := func(what string, err error) {
		t.Helper()
		var dup *store.DuplicateError
		if !errors.As(err, &dup) || dup.Of != kept {
			t.Errorf("%s: %v, want a duplicate of %s", what, err, kept)
		}
	}
	isDup("RequeueJob", env.Store.RequeueJob(ctx, job, true))
	a, err := env.Store.AssetByID(ctx, failed)
	if err != nil {
		t.Fatal(err)
	}
	isDup("Reprocess", env.Store.Reprocess(ctx, a))
	isDup("SaveIngest", env.Store.SaveIngest(ctx, store.IngestOutput{AssetID: failed, EXIF: []byte(`{}`), Quality: []byte(`{}`), HashAlgorithm: "h"}))

	if s := env.AssetStatus(t, failed); s != "failed" {
		t.Errorf("the failed asset is %s, want failed", s)
	}
	j, err := env.Store.JobByID(ctx, job)
	if err != nil || j.Status != store.JobFailed {
		t.Errorf("its job: %+v, %v; want failed", j, err)
	}
}

// A failed job of a cancelled batch run again waits in a batch that stays
// cancelled; when the enqueue after that fails, no release walks its batch
// (AdmissibleJobs reads running batches only), so the sweep must list it
// among the stranded jobs it enqueues as they are.
func TestStrandedJobsTakeJobsOfBatchesNotRunning(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	batch, ids := batchOf(t, env, owner, project, 2)
	running, _ := batchOf(t, env, owner, project, 1)
	env.FailJob(t, ids[0], 3, "boom")
	if _, _, err := env.Store.CancelBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.RequeueJob(ctx, ids[0], true); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if b, err := env.Store.Batch(ctx, owner, batch); err != nil || b.Status != "cancelled" {
		t.Fatalf("batch: %+v, %v", b, err)
	}
	stranded, err := env.Store.StrandedJobs(ctx, later, 10)
	if err != nil || len(stranded) != 1 || stranded[0].ID != ids[0] {
		t.Fatalf("stranded: %d jobs, %v; want the job run again in the cancelled batch", len(stranded), err)
	}
	// No release hands it over: its batch is not among those it walks.
	job, err := env.Store.JobByID(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	shares, outside, err := env.Store.UserQueuesOf(ctx, []store.Job{*job})
	if err != nil || len(shares) != 0 || len(outside) != 1 {
		t.Fatalf("shares of the job: %v, outside them: %d, %v", shares, len(outside), err)
	}
	if jobs, err := env.Store.AdmissibleJobs(ctx, store.UserQueue{User: owner, Queue: job.Queue}, later, store.QueueCaps{}); err != nil ||
		len(jobs) != 1 || *jobs[0].BatchID != running {
		t.Fatalf("releasable: %d, %v; want the running batch's job only", len(jobs), err)
	}
}
