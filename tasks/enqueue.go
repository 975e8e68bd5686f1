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

// EnqueueAll enqueues ts in parallel and returns one error per task: nil
// when enqueued now, asynq.ErrTaskIDConflict when a task with its TaskID
// is there already (see IDInUse), another error when it is not in the queue.
func EnqueueAll(ctx context.Context, c *asynq.Client, ts []*asynq.Task, opts ...asynq.Option) []error {
	errs := make([]error, len(ts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(enqueueConcurrency, len(ts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				_, errs[i] = c.EnqueueContext(ctx, ts[i], opts...)
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
	if IDInUse(err) {
		return nil
	}
	return err
}

// IDInUse reports whether err says a task with the same TaskID is in the
// queue already, in whatever state.
func IDInUse(err error) bool {
	return errors.Is(err, asynq.ErrTaskIDConflict) || errors.Is(err, asynq.ErrDuplicateTask)
}
