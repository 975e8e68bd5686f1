package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"lightbox/events"
	"lightbox/store"
	"lightbox/tasks"
)

// Tracker is a worker's side of the job lifecycle: it records the state
// of every run of a task that has a job row (Run), tells listeners and
// webhooks, admits waiting jobs as others end, and repairs what crashes
// and outages leave behind (Sweep, Watch). One per worker process.
type Tracker struct {
	d      *Dispatcher
	log    *slog.Logger
	events *events.Publisher
	rdb    redis.UniversalClient
	queues []string
	// waitOut turns an error caused by an outage into a wait for the
	// service (the worker's rule); other errors come back as they are.
	waitOut func(ctx context.Context, err error) error

	states   *stateWriter
	room     *roomMaker
	marks    *CancelMarks
	stopping atomic.Bool // set once the worker shuts down: see Run

	// reconcileAt is where the next sweep's comparison of jobs with their
	// tasks starts.
	reconcileMu    sync.Mutex
	reconcileAt    *store.Cursor
	reconcileAfter time.Duration
	loss           redisLoss // what this process saw of Redis losing its data
}

// TrackerConfig is what a Tracker works with beside its Dispatcher.
type TrackerConfig struct {
	Events *events.Publisher
	// Queues are the queues the worker serves.
	Queues []string
	// WaitOut turns an error caused by an outage into a wait for the
	// service (tasks.Unavailable), and returns any other as it is.
	WaitOut func(ctx context.Context, err error) error
	Log     *slog.Logger
	// ReconcileAfter is how long a live job's row must have been quiet
	// before the sweep compares it with its task in Asynq: its row changes
	// as its task runs, so a quiet one may have lost its task. Zero means
	// two minutes.
	ReconcileAfter time.Duration
}

// Tracker returns the Tracker of a worker process; d's Redis holds the
// cancel marks and Asynq's own state. Close it once the worker stops.
func (d *Dispatcher) Tracker(c TrackerConfig) *Tracker {
	t := &Tracker{d: d, log: c.Log, events: c.Events, rdb: d.Redis, queues: c.Queues, waitOut: c.WaitOut,
		marks: NewCancelMarks(d.Redis), loss: redisLoss{leftToAsynq: map[string]bool{}}}
	if t.log == nil {
		t.log = d.Log
	}
	if t.waitOut == nil {
		t.waitOut = func(_ context.Context, err error) error { return err }
	}
	if t.reconcileAfter = c.ReconcileAfter; t.reconcileAfter <= 0 {
		t.reconcileAfter = reconcileAfter
	}
	t.room = newRoomMaker(d, t.log)
	t.states = newStateWriter(t)
	return t
}

// Run runs task t through next and records the run in its job's row:
// running with the attempt, then done, failed with a stable code, or
// queued again with the time of the next run. A run that a later run
// took over (store.ErrStaleRun) records no end. The worker writes these,
// not the enqueuer, so a retry started anywhere (the API, Asynqmon) shows
// in the job. Only the check that the job is still wanted is waited for;
// the states go to the state writer. Tasks without a job row run as they
// are.
func (tr *Tracker) Run(ctx context.Context, t *asynq.Task, next asynq.Handler) error {
	var ref tasks.Job
	// go-json rather than encoding/json: this runs before every task, and
	// encoding/json's reflection walks deep enough to grow the fresh stack
	// of the goroutine Asynq runs each task on.
	if !tasks.HasJob(t.Type()) || gojson.Unmarshal(t.Payload(), &ref) != nil || ref.JobID == uuid.Nil {
		return next.ProcessTask(ctx, t)
	}
	retried, _ := asynq.GetRetryCount(ctx)
	if wanted, err := tr.stillWanted(ctx, ref); !wanted || err != nil {
		return tr.waitOut(ctx, err)
	}
	state := store.JobUpdate{ID: ref.JobID, Status: store.JobRunning, Attempt: retried + 1}
	tr.states.record(state)

	runErr := tr.Interrupted(ctx, next.ProcessTask(ctx, t))
	if errors.Is(runErr, store.ErrStaleRun) {
		// A later run of the task holds the job and records its end.
		return nil
	}
	if runErr != nil {
		state.Code, state.Message = ErrorCode(runErr)
	}
	switch {
	case runErr == nil:
		state.Status = store.JobDone
	case IsInterrupted(runErr):
		state.Status, state.NextRun = store.JobQueued, time.Now()
	case !tasks.IsFailure(runErr) || !FailsForGood(ctx, runErr):
		state.Status, state.NextRun = store.JobQueued, time.Now().Add(tasks.RetryDelay(retried, runErr, t))
	default:
		state.Status, state.FailAsset = store.JobFailed, tasks.FailsAsset(t.Type())
	}
	tr.states.record(state)
	return runErr
}

// Sync returns once every state recorded before it is written.
func (tr *Tracker) Sync() { tr.states.sync() }

// Stopping says the worker is shutting down: a run cut short from now on
// was handed back to the queue (see IsInterrupted).
func (tr *Tracker) Stopping() { tr.stopping.Store(true) }

// Close writes the states still pending; states recorded later are
// written at once.
func (tr *Tracker) Close() {
	tr.states.close()
	tr.room.close()
}

// JobChanged tells listeners of a job's new state, its asset's, and its
// batch's when the job ended.
func (tr *Tracker) JobChanged(ctx context.Context, j *store.Job, b *store.Batch) {
	tr.jobsChanged(ctx, []jobUpdate{{job: j, batch: b}})
}

// stillWanted reports whether a job's task should run: not when the job
// was canceled, and a permanent error when it is gone with its project.
// Postgres is asked only in a project marked for cancels (MarkCanceling);
// in the others no job can be canceled, and the process learns that from
// Redis a few times a second, not per task. A job deleted with its asset
// or project may then run: its handler finds nothing to work on, as it
// does when the delete comes while it runs.
func (tr *Tracker) stillWanted(ctx context.Context, ref tasks.Job) (bool, error) {
	if ref.ProjectID != uuid.Nil {
		marked, err := tr.marks.MayBeCanceled(ctx, ref.ProjectID)
		if err != nil || !marked {
			return err == nil, err
		}
	}
	status, err := tr.d.Store.JobStatus(ctx, ref.JobID)
	if errors.Is(err, store.ErrNotFound) {
		// Its project was deleted: there is nothing left to work for.
		return false, tasks.Permanent(errors.New("job no longer exists"))
	}
	return err == nil && status != store.JobCanceled, err
}

// interruptedError is a run the worker's stop cut short: Asynq gave up on
// it at the shutdown timeout and put its task back in the queue, so it
// spends no attempt and fails nothing.
type interruptedError struct{ cause error }

func (e *interruptedError) Error() string {
	return "The worker stopped while the task ran; it runs again on the next worker."
}
func (e *interruptedError) ErrorCode() string { return "interrupted" }
func (e *interruptedError) Unwrap() error     { return e.cause }

// Interrupted gives a run's err as one IsInterrupted reports when it ended
// because the worker is stopping, else as it is. A handler that records
// its outcome itself (an export, a webhook delivery) asks it first.
func (tr *Tracker) Interrupted(ctx context.Context, err error) error {
	if err != nil && tr.stopping.Load() && errors.Is(ctx.Err(), context.Canceled) && !IsInterrupted(err) {
		return &interruptedError{cause: err}
	}
	return err
}

// IsInterrupted reports whether err is a run the worker's stop cut short.
func IsInterrupted(err error) bool {
	var ie *interruptedError
	return errors.As(err, &ie)
}

// FailsForGood reports whether a run that ended with err was its task's
// last: a permanent error, or no retry left. A run the worker's stop cut
// short never is, whatever its attempt: Asynq has put its task back.
func FailsForGood(ctx context.Context, err error) bool {
	if err == nil || IsInterrupted(err) {
		return false
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	return tasks.IsPermanent(err) || retried >= maxRetry
}

// CodedError is an error with a stable code a user can act on.
type CodedError interface {
	error
	ErrorCode() string
}

// ErrorCode gives err's stable code and a message for the job and asset.
// Users see that message, so an error without a code of its own (a path,
// a database error, an import URL with its credentials) is described only
// in general: the worker logs it in full.
func ErrorCode(err error) (string, string) {
	var c CodedError
	var rl *tasks.RateLimitedError
	switch {
	case errors.As(err, &c):
		return c.ErrorCode(), c.Error()
	case errors.As(err, &rl) && rl.Cause != nil:
		return "service_unavailable", fmt.Sprintf("The %s does not answer; the task waits for it and runs again.", rl.Limit)
	case errors.As(err, &rl):
		return "rate_limited", rl.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", "The task took longer than its time limit."
	case tasks.IsPermanent(err):
		return "invalid_input", "The task cannot be done as asked, so it is not retried."
	}
	return "task_failed", "The task failed on our side; it is retried while attempts remain."
}
