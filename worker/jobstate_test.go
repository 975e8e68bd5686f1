package worker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// TestCanceledJobsDoNotRun cancels jobs the way the API does (the project
// marked in Redis, then the job's row canceled) and runs their tasks: a
// canceled job's handler never runs, while the project's other job, and a
// job of a project that never had a cancel, run and end done. The worker
// has run a job of the project just before the mark, so it has seen the
// project unmarked.
func TestCanceledJobsDoNotRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	var ran sync.Map
	h.w.Handle("test:count", asynq.HandlerFunc(func(_ context.Context, t *asynq.Task) error {
		ran.Store(string(t.Payload()), true)
		return nil
	}))

	newJob := func(project uuid.UUID) store.Job {
		j := plainJob("test:count", project)
		if _, err := h.env.Store.InsertJobs(ctx, []store.Job{j}); err != nil {
			t.Fatal(err)
		}
		return j
	}
	run := func(j store.Job) error {
		return h.w.Handler().ProcessTask(ctx, tasks.New(j.Type, j.Payload, j.TaskID))
	}

	marked, plain := h.project(), h.project()
	if err := run(newJob(marked)); err != nil {
		t.Fatal(err)
	}
	canceled, kept, other := newJob(marked), newJob(marked), newJob(plain)
	if err := jobs.MarkCanceling(ctx, h.env.Redis, marked); err != nil {
		t.Fatal(err)
	}
	h.env.SetJobs(t, testenv.JobRow{Status: store.JobCanceled}, "id = $1", canceled.ID)

	for _, j := range []store.Job{canceled, kept, other} {
		if err := run(j); err != nil {
			t.Fatalf("job %s: %v", j.ID, err)
		}
	}
	if _, ok := ran.Load(string(canceled.Payload)); ok {
		t.Error("the canceled job's handler ran")
	}
	for _, j := range []store.Job{kept, other} {
		if _, ok := ran.Load(string(j.Payload)); !ok {
			t.Errorf("job %s did not run", j.ID)
		}
		if n := h.count(`SELECT count(*) FROM jobs WHERE id = $1 AND status = 'done'`, j.ID); n != 1 {
			t.Errorf("job %s is not done", j.ID)
		}
	}
	if n := h.count(`SELECT count(*) FROM jobs WHERE id = $1 AND status = 'canceled'`, canceled.ID); n != 1 {
		t.Error("the canceled job is no longer canceled")
	}

	// In a marked project, a job gone with its rows fails for good.
	gone := newJob(marked)
	h.exec(`DELETE FROM jobs WHERE id = $1`, gone.ID)
	if err := run(gone); !tasks.IsPermanent(err) {
		t.Errorf("a job that no longer exists ran or will be retried: %v", err)
	}
	if _, ok := ran.Load(string(gone.Payload)); ok {
		t.Error("the deleted job's handler ran")
	}
}

// plainJob is a job row of typ in project, on the default queue, whose
// task carries nothing but the job reference.
func plainJob(typ string, project uuid.UUID) store.Job {
	id := uuid.New()
	payload := []byte(fmt.Sprintf(`{"jobId":%q,"projectId":%q}`, id, project))
	return store.Job{ID: id, ProjectID: project, Type: typ, Queue: "default", TaskID: typ + ":" + id.String(), Payload: payload}
}

// test:count has job rows, as every task of Lightbox's own that a user
// can cancel; defined before any test's worker starts.
func init() { tasks.Define("test:count", tasks.QueueDefault, true) }
