package tasks

import (
	"context"
	"errors"
	"sync"

	"github.com/hibiken/asynq"
)

// enqueueConcurrency bounds the parallel enqueues of one call: enough to
// hide Redis round trips, few enough not to crowd the connection pool.
const enqueueConcurrency = 8

// EnqueueAll enqueues ts in parallel and returns one error per task, nil
// when the task is in the queue: enqueued now, or already there under its
// TaskID (at-least-once callers enqueue again freely).
func EnqueueAll(ctx context.Context, c *asynq.Client, ts []*asynq.Task, opts ...asynq.Option) []error {
	errs := make([]error, len(ts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(enqueueConcurrency, len(ts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = Enqueue(ctx, c, ts[i], opts...)
			}
		}()
	}
	for i := range ts {
		next <- i
	}
	close(next)
	wg.Wait()
	return errs
}

// Enqueue enqueues t; a task already waiting under the same TaskID is success.
func Enqueue(ctx context.Context, c *asynq.Client, t *asynq.Task, opts ...asynq.Option) error {
	_, err := c.EnqueueContext(ctx, t, opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) || errors.Is(err, asynq.ErrDuplicateTask) {
		return nil
	}
	return err
}
