package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/store"
	"lightbox/tasks"
)

// codedError is an error with a stable code a user can act on.
type codedError interface {
	error
	ErrorCode() string
}

// errorCode gives err's stable code and a message for the job and asset.
// Users see that message, so an error without a code of its own (a path, a
// database error, an import URL with its credentials) is described only in
// general: logTasks has logged it in full.
func errorCode(err error) (string, string) {
	var c codedError
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

// stillWanted reports whether a job's task should run: not when the job
// was canceled, and a permanent error when it is gone with its project.
// Postgres is asked only in a project marked for cancels
// (jobs.MarkCanceling); in the others no job can be canceled, and the
// process learns that from Redis a few times a second, not per task. A
// job deleted with its asset or project may then run: its handler finds
// nothing to work on, as it does when the delete comes while it runs.
func (w *Worker) stillWanted(ctx context.Context, ref tasks.Job) (bool, error) {
	if ref.ProjectID != uuid.Nil {
		marked, err := w.marks.MayBeCanceled(ctx, ref.ProjectID)
		if err != nil || !marked {
			return err == nil, err
		}
	}
	status, err := w.st.JobStatus(ctx, ref.JobID)
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

// interrupted gives a run's err as an interruptedError when it ended
// because the worker is stopping, else as it is.
func (w *Worker) interrupted(ctx context.Context, err error) error {
	if err != nil && w.stopping.Load() && errors.Is(ctx.Err(), context.Canceled) && !isInterrupted(err) {
		return &interruptedError{cause: err}
	}
	return err
}

func isInterrupted(err error) bool {
	var ie *interruptedError
	return errors.As(err, &ie)
}

// failsForGood reports whether a run that ended with err was its task's
// last: a permanent error, or no retry left. A run the worker's stop cut
// short never is, whatever its attempt: Asynq has put its task back.
func failsForGood(ctx context.Context, err error) bool {
	if err == nil || isInterrupted(err) {
		return false
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	return tasks.IsPermanent(err) || retried >= maxRetry
}

// How long a task waits for a service that does not answer before it runs
// again: the blob store, the database.
const (
	storageRetry  = 10 * time.Second
	databaseRetry = 5 * time.Second
)

// waitOutOutages makes an outage of the blob store (or its disk full) or
// of Postgres a wait
// rather than a failure: the task runs again once the service may be back,
// without spending a retry, so an outage fails no asset, archives no task
// and leaves no job on a later attempt than its work took. A task that
// failed while the database does not answer a ping is taken to have
// failed for that: whatever its own trouble, it shows once the database
// is back.
func (w *Worker) waitOutOutages(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		return w.outage(ctx, next.ProcessTask(ctx, t))
	})
}

// outage is err as a wait for the service that caused it (see
// waitOutOutages), or err itself.
func (w *Worker) outage(ctx context.Context, err error) error {
	var rl *tasks.RateLimitedError
	switch {
	case err == nil || tasks.IsPermanent(err) || errors.As(err, &rl):
		return err
	case errors.Is(err, blob.ErrUnavailable) || errors.Is(err, blob.ErrFull):
		// A full disk, like a bucket that does not answer, waits for an
		// operator, not for the task's retries to run out.
		return tasks.Unavailable("blob storage", storageRetry, err)
	case w.databaseDown(ctx):
		return tasks.Unavailable("the database", databaseRetry, err)
	}
	return err
}

// databaseDown reports whether Postgres fails to answer a ping now.
func (w *Worker) databaseDown(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	return w.st.Ping(ctx) != nil
}

// trackJobs records each run in the job's row: running with its attempt,
// then done, failed with a code, or queued again with the next run time;
// a run that a later run took over (store.ErrStaleRun) records no end.
// The worker writes these, not the enqueuer, so a retry started anywhere
// (the API, Asynqmon) shows in the job. Only the check that the job is
// still wanted is waited for; the states go to the job-state writer.
func (w *Worker) trackJobs(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		var ref tasks.Job
		if !tasks.HasJob(t.Type()) || json.Unmarshal(t.Payload(), &ref) != nil || ref.JobID == uuid.Nil {
			return next.ProcessTask(ctx, t)
		}
		retried, _ := asynq.GetRetryCount(ctx)
		if wanted, err := w.stillWanted(ctx, ref); !wanted || err != nil {
			return w.outage(ctx, err)
		}
		state := store.JobState{ID: ref.JobID, Status: store.JobRunning, Attempt: retried + 1}
		w.states.record(state)

		runErr := w.interrupted(ctx, next.ProcessTask(ctx, t))
		if errors.Is(runErr, store.ErrStaleRun) {
			// A later run of the task holds the job and records its end.
			return nil
		}

		if runErr != nil {
			state.Code, state.Message = errorCode(runErr)
		}
		switch {
		case runErr == nil:
			state.Status = store.JobDone
		case isInterrupted(runErr):
			state.Status, state.NextRun = store.JobQueued, time.Now()
		case !tasks.IsFailure(runErr) || !failsForGood(ctx, runErr):
			state.Status, state.NextRun = store.JobQueued, time.Now().Add(tasks.RetryDelay(retried, runErr, t))
		default:
			state.Status, state.FailAsset = store.JobFailed, tasks.FailsAsset(t.Type())
		}
		w.states.record(state)
		return runErr
	})
}
