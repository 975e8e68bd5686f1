package jobs_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// live is what the sweeper hands Reconcile: every job recorded as in the
// queue and not ended, whatever its age.
func (h *harness) live() []store.Job {
	h.t.Helper()
	jobs, err := h.env.Store.LiveJobs(context.Background(), time.Now().Add(time.Hour), nil, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	return jobs
}

func (h *harness) inQueue(j store.Job) bool {
	h.t.Helper()
	_, err := h.inspector.GetTaskInfo(j.Queue, j.TaskID)
	return err == nil
}

func TestReconcileRunsAgainATaskArchivedWhileItsJobIsLive(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	j := h.exportJob()
	h.d.Enqueue(ctx, slog.Default(), []store.Job{j})
	// Postgres was down for longer than the retries: Asynq archived the
	// task, the job row never heard of it.
	if err := h.inspector.ArchiveTask(j.Queue, j.TaskID); err != nil {
		t.Fatal(err)
	}
	r, err := h.d.Reconcile(ctx, slog.Default(), h.live())
	if err != nil {
		t.Fatal(err)
	}
	if r.Rerun != 1 || r.Enqueued != 0 {
		t.Fatalf("reconcile: %+v", r)
	}
	if s := h.state(j); s != asynq.TaskStatePending {
		t.Fatalf("task is %s, want pending", s)
	}
}

func TestReconcileLeavesLiveTasksAndEndedJobsAlone(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	waiting, failed := h.exportJob(), h.exportJob()
	h.d.Enqueue(ctx, slog.Default(), []store.Job{waiting, failed})
	h.inspector.ArchiveTask(failed.Queue, failed.TaskID)
	h.env.FailJob(t, failed.ID, 4, "task_failed")
	r, err := h.d.Reconcile(ctx, slog.Default(), h.live())
	if err != nil {
		t.Fatal(err)
	}
	if r.Checked != 1 || r.Rerun != 0 || r.Enqueued != 0 {
		t.Fatalf("reconcile: %+v", r)
	}
	if s := h.state(failed); s != asynq.TaskStateArchived {
		t.Fatalf("a job that failed for good ran again: task %s", s)
	}
}

func TestReconcileEnqueuesATaskRedisLost(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	j := h.exportJob()
	h.d.Enqueue(ctx, slog.Default(), []store.Job{j})
	if err := h.inspector.DeleteTask(j.Queue, j.TaskID); err != nil {
		t.Fatal(err)
	}
	r, err := h.d.Reconcile(ctx, slog.Default(), h.live())
	if err != nil || r.Enqueued != 1 {
		t.Fatalf("reconcile: %+v, %v", r, err)
	}
	if s := h.state(j); s != asynq.TaskStatePending {
		t.Fatalf("task is %s, want pending", s)
	}
	if got, _ := h.env.Store.JobByID(ctx, j.ID); got.EnqueuedAt == nil || got.Status != store.JobQueued {
		t.Fatalf("job after reconcile: %s, enqueued %v", got.Status, got.EnqueuedAt)
	}
}

func TestReconcileRefillsBatchCapsAfterRedisLosesEverything(t *testing.T) {
	h := newHarness(t, 2)
	ctx := context.Background()
	batch := h.importJobs(4)
	lone := h.exportJob()
	h.d.Enqueue(ctx, slog.Default(), append(batch, lone))
	if err := h.env.Redis.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	r, err := h.d.Reconcile(ctx, slog.Default(), h.live())
	if err != nil || r.Checked != 3 || r.Enqueued != 3 {
		t.Fatalf("reconcile: %+v, %v", r, err)
	}
	if n := len(h.queued(batch)); n != 2 || !h.inQueue(lone) {
		t.Fatalf("%d of the batch in the queue, want its cap of 2; the lone job in it: %v", n, h.inQueue(lone))
	}
}

// queued are those of jobs whose task is in the queue.
func (h *harness) queued(jobs []store.Job) []store.Job {
	h.t.Helper()
	var out []store.Job
	for _, j := range jobs {
		if h.inQueue(j) {
			out = append(out, j)
		}
	}
	return out
}

func TestReconcileKeepsStrandedJobsOutOfTheBatchCap(t *testing.T) {
	h := newHarness(t, 2)
	ctx := context.Background()
	batch := h.importJobs(4)
	h.d.Enqueue(ctx, slog.Default(), batch)
	first := h.queued(batch)
	if len(first) != 2 {
		t.Fatalf("%d of the batch in the queue, want its cap of 2", len(first))
	}
	// One of the two tasks handed over is archived by an outage, the other lost
	// with Redis data: neither may hold a place under the cap for ever.
	h.inspector.ArchiveTask(first[0].Queue, first[0].TaskID)
	h.inspector.DeleteTask(first[1].Queue, first[1].TaskID)
	r, err := h.d.Reconcile(ctx, slog.Default(), h.live())
	if err != nil || r.Rerun != 1 || r.Enqueued != 1 {
		t.Fatalf("reconcile: %+v, %v", r, err)
	}
	if s := h.state(first[0]); s != asynq.TaskStatePending {
		t.Fatalf("archived task is %s, want pending", s)
	}
	handed := h.queued(batch)
	if len(handed) != 2 {
		t.Fatalf("%d of the batch in the queue, want its cap of 2", len(handed))
	}
	// As they end, the rest of the batch starts.
	for _, j := range handed {
		h.inspector.DeleteTask(j.Queue, j.TaskID)
		h.env.FinishJob(t, j.ID)
	}
	owner, err := h.env.Store.ProjectOwner(ctx, h.project)
	if err != nil {
		t.Fatal(err)
	}
	if n := h.d.Admit(ctx, slog.Default(), store.UserQueue{User: owner, Queue: batch[0].Queue}); n != 2 || len(h.queued(batch)) != 2 {
		t.Fatalf("admitted %d, want the other 2", n)
	}
}

func TestReconcileRecordsATaskThatCompletedUnrecorded(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	j := h.exportJob()
	// The task ran to success, kept for a while by its retention, but
	// Postgres was down when the worker went to record it.
	opt, _ := asynq.ParseRedisURI(h.env.RedisURL)
	client := asynq.NewClient(opt)
	defer client.Close()
	if _, err := client.Enqueue(tasks.New(j.Type, j.Payload, j.TaskID), asynq.Retention(time.Hour)); err != nil {
		t.Fatal(err)
	}
	h.env.Store.ClaimEnqueue(ctx, []uuid.UUID{j.ID})
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: 1, Queues: map[string]int{j.Queue: 1},
		Logger: quietAsynq{}, TaskCheckInterval: 100 * time.Millisecond})
	if err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil })); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	testenv.Eventually(t, "the task to complete", 2*time.Minute, func() bool { return h.state(j) == asynq.TaskStateCompleted })

	r, err := h.d.Reconcile(ctx, slog.Default(), h.live())
	if err != nil || len(r.Finished) != 1 || r.Enqueued+r.Rerun != 0 {
		t.Fatalf("reconcile: %+v, %v", r, err)
	}
	if got, _ := h.env.Store.JobByID(ctx, j.ID); got.Status != store.JobDone {
		t.Fatalf("job is %s, want done", got.Status)
	}
}

// quietAsynq drops Asynq's own logs.
type quietAsynq struct{}

func (quietAsynq) Debug(...any) {}
func (quietAsynq) Info(...any)  {}
func (quietAsynq) Warn(...any)  {}
func (quietAsynq) Error(...any) {}
func (quietAsynq) Fatal(...any) {}

// A job can wait again in a batch that no longer runs: a failed job of a
// cancelled batch run again (the batch stays cancelled), or an archived
// task run again from Asynqmon in a batch that ended. Redis losing its
// task must not strand it: no admission walks batches that are not running.
func TestReconcileHandsOverJobsOfBatchesNoLongerRunning(t *testing.T) {
	for _, c := range []struct {
		name, status string
		end          func(h *harness, batch []store.Job) store.Job
	}{
		{"rerun in a cancelled batch", "cancelled", func(h *harness, batch []store.Job) store.Job {
			ctx := context.Background()
			h.env.FailJob(h.t, batch[0].ID, 3, "boom")
			if _, _, err := h.env.Store.CancelBatch(ctx, *batch[0].BatchID); err != nil {
				h.t.Fatal(err)
			}
			h.d.Drop(slog.Default(), batch)
			retried, _, err := h.d.Rerun(ctx, slog.Default(), []store.Job{batch[0]})
			if err != nil || len(retried) != 1 {
				h.t.Fatalf("rerun: %v, %v", retried, err)
			}
			return batch[0]
		}},
		{"retried from Asynqmon in a partial batch", "partial", func(h *harness, batch []store.Job) store.Job {
			h.env.FinishJob(h.t, batch[1].ID)
			h.env.FailJob(h.t, batch[0].ID, 3, "boom")
			// The operator runs the archived task again; the worker starts it.
			h.env.RecordJob(h.t, store.JobUpdate{ID: batch[0].ID, Status: store.JobRunning, Attempt: 1})
			return batch[0]
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 2)
			ctx := context.Background()
			batch := h.importJobs(2)
			h.d.Enqueue(ctx, slog.Default(), batch)
			j := c.end(h, batch)
			var status string
			if err := h.env.DB.GetContext(ctx, &status, `SELECT status FROM batches WHERE id = $1`, *j.BatchID); err != nil || status != c.status {
				t.Fatalf("batch is %q (%v), want %s", status, err, c.status)
			}
			// Redis loses the job's task.
			h.inspector.DeleteTask(j.Queue, j.TaskID)
			r, err := h.d.Reconcile(ctx, slog.Default(), h.live())
			if err != nil || r.Enqueued != 1 || !h.inQueue(j) {
				t.Fatalf("reconcile: %+v, %v; the job in the queue: %v", r, err, h.inQueue(j))
			}
		})
	}
}

// A job recorded before its type moved to another queue (face scans were
// on low) is handed over to the queue its row names, where the sweep
// looks for its task and finds it.
func TestEnqueuePutsATaskInTheQueueItsRowNames(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	j := h.exportJob()
	h.env.SetJobs(t, testenv.JobRow{Queue: tasks.QueueLow}, "id = $1", j.ID)
	j.Queue = tasks.QueueLow
	if n := h.d.Enqueue(ctx, slog.Default(), []store.Job{j}); n != 1 {
		t.Fatalf("%d jobs handed over, want 1", n)
	}
	if !h.inQueue(j) {
		t.Fatalf("the task is not in %s, the queue its row names", j.Queue)
	}
	r, err := h.d.Reconcile(ctx, slog.Default(), h.live())
	if err != nil {
		t.Fatal(err)
	}
	if r.Checked != 1 || r.Enqueued != 0 || r.Rerun != 0 {
		t.Fatalf("reconcile: %+v", r)
	}
	if _, err := h.inspector.GetTaskInfo(tasks.QueueOf(tasks.TypeExport), j.TaskID); err == nil {
		t.Fatalf("the task is in %s as well", tasks.QueueOf(tasks.TypeExport))
	}
}
