package worker

import (
	"context"
	"errors"
	"time"

	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/tasks"
)

// How long a task waits for a service that does not answer before it runs
// again: the blob store, the database.
const (
	storageRetry  = 10 * time.Second
	databaseRetry = 5 * time.Second
)

// waitOutOutages makes an outage of the blob store (or its disk full) or
// of Postgres a wait rather than a failure: the task runs again once the
// service may be back, without spending a retry, so an outage fails no
// asset, archives no task and leaves no job on a later attempt than its
// work took. A task that failed while the database does not answer a
// ping is taken to have failed for that: whatever its own trouble, it
// shows once the database is back.
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
	case w.st.Down(ctx):
		return tasks.Unavailable("the database", databaseRetry, err)
	}
	return err
}
