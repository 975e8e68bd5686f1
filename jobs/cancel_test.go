package jobs_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/events"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// TestMarkOutlastsRememberedAnswers: a worker that saw a project unmarked
// just before it was marked sees the mark by the time any cancel can
// follow, whether the canceler set the mark or found it newly set by
// another still waiting for it to settle.
func TestMarkOutlastsRememberedAnswers(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ctx := context.Background()

	for _, second := range []bool{false, true} {
		project := uuid.New()
		marks := jobs.NewCancelMarks(env.Redis)
		if marked, err := marks.MayBeCanceled(ctx, project); err != nil || marked {
			t.Fatalf("an unmarked project: marked %v, %v", marked, err)
		}
		first := make(chan error, 1)
		go func() { first <- jobs.MarkCanceling(ctx, env.Redis, project) }()
		if second {
			// Another canceler comes once the first has set the mark, well
			// before the first has waited out its settling.
			testenv.EventuallyEvery(t, "the first mark", 2*time.Minute, time.Millisecond, func() bool {
				ok, err := jobs.MayBeCanceled(ctx, env.Redis, project)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			})
			if err := jobs.MarkCanceling(ctx, env.Redis, project); err != nil {
				t.Fatal(err)
			}
		} else if err := <-first; err != nil {
			t.Fatal(err)
		}
		if marked, err := marks.MayBeCanceled(ctx, project); err != nil || !marked {
			t.Errorf("second canceler %v: once marking returned, the worker still saw the project unmarked (%v)", second, err)
		}
		if second {
			if err := <-first; err != nil {
				t.Fatal(err)
			}
		}
	}
}

// test:count has job rows, as every task of Lightbox's own that a user
// can cancel.
func init() { tasks.Define("test:count", tasks.QueueDefault, true) }

// TestCanceledJobsDoNotRun cancels jobs the way the API does (the project
// marked in Redis, then the job's row canceled) and runs their tasks
// through a worker's Tracker: a canceled job's handler never runs, while
// the project's other job, and a job of a project that never had a cancel,
// run and end done. The Tracker has run a job of the project just before
// the mark, so it has seen the project unmarked.
func TestCanceledJobsDoNotRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	ctx := context.Background()
	tr := h.d.Tracker(jobs.TrackerConfig{Events: events.NewPublisher(h.env.Redis, events.PublisherOptions{})})
	t.Cleanup(tr.Close)
	var ran sync.Map
	count := asynq.HandlerFunc(func(_ context.Context, t *asynq.Task) error {
		ran.Store(string(t.Payload()), true)
		return nil
	})
	newJob := func(project uuid.UUID) store.Job {
		id := uuid.New()
		j := store.Job{ID: id, ProjectID: project, Type: "test:count", Queue: tasks.QueueDefault, TaskID: "test:count:" + id.String(),
			Payload: fmt.Appendf(nil, `{"jobId":%q,"projectId":%q}`, id, project)}
		if _, err := h.env.Store.InsertJobs(ctx, []store.Job{j}); err != nil {
			t.Fatal(err)
		}
		return j
	}
	run := func(j store.Job) error {
		err := tr.Run(ctx, tasks.New(j.Type, j.Payload, j.TaskID), count)
		tr.Sync()
		return err
	}
	status := func(j store.Job) store.JobStatus {
		got, err := h.env.Store.JobByID(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}

	_, plain := h.env.Project(t)
	marked := h.project
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
		if s := status(j); s != store.JobDone {
			t.Errorf("job %s is %s, not done", j.ID, s)
		}
	}
	if s := status(canceled); s != store.JobCanceled {
		t.Errorf("the canceled job is %s, no longer canceled", s)
	}

	// In a marked project, a job gone with its rows fails for good.
	gone := newJob(marked)
	if _, err := h.env.DB.Exec(`DELETE FROM jobs WHERE id = $1`, gone.ID); err != nil {
		t.Fatal(err)
	}
	if err := run(gone); !tasks.IsPermanent(err) {
		t.Errorf("a job that no longer exists ran or will be retried: %v", err)
	}
	if _, ok := ran.Load(string(gone.Payload)); ok {
		t.Error("the deleted job's handler ran")
	}
}
