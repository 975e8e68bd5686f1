package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/store"
	"lightbox/tasks"
)

// Reconciled says what Reconcile found and did.
type Reconciled struct {
	Checked  int // jobs compared with their task
	Enqueued int // jobs whose task was missing, handed over again
	Rerun    int // archived tasks of jobs still queued or running, run again
	// Finished are jobs whose task completed but whose row never heard of
	// it, now recorded done, each with its batch (nil outside one).
	Finished []Ended
}

// Ended is a job Reconcile recorded as ended, with its recounted batch.
type Ended struct {
	Job   *store.Job
	Batch *store.Batch
}

// Reconcile compares jobs, recorded as in the queue and not ended (see
// store.LiveJobs), with Asynq's own state of their tasks and repairs what
// an outage left behind:
//
//   - a task missing from Redis (lost data, a flushed database) is handed
//     over again; the job stops counting in its batch's window first, so a
//     batch's lost jobs cannot hold the window the rest wait for;
//   - an archived task whose job is still queued or running was archived
//     by an outage, not by its own failure (that would have been recorded
//     as failed), so it runs again;
//   - a completed task (kept when enqueued with a retention) whose row was
//     never finished is recorded done: the handler succeeded and only the
//     write of its outcome was lost.
//
// Waiting, scheduled, retrying and running tasks are left alone. It stops
// at the first question Redis does not answer.
func (d *Dispatcher) Reconcile(ctx context.Context, log *slog.Logger, jobs []store.Job) (Reconciled, error) {
	var r Reconciled
	var missing []store.Job
	lostQueues := false
	for _, j := range jobs {
		if !tasks.HasJob(j.Type) || j.TaskID == "" {
			continue
		}
		r.Checked++
		state, gone, lostQueue, err := d.revive(j.Queue, j.TaskID)
		switch {
		case err != nil:
			return r, err
		case gone:
			lostQueues = lostQueues || lostQueue
			missing = append(missing, j)
		case state == asynq.TaskStateArchived:
			log.Info("sweep runs again a task archived while its job was live", "job", j.ID, "task", j.TaskID)
			r.Rerun++
		case state == asynq.TaskStateCompleted:
			job, batch, err := d.Store.JobFinished(ctx, j.ID, store.JobDone, "", "")
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return r, err
			}
			if err == nil {
				r.Finished = append(r.Finished, Ended{Job: job, Batch: batch})
			}
		}
	}
	if len(missing) == 0 {
		return r, nil
	}
	ids := make([]uuid.UUID, len(missing))
	for i, j := range missing {
		ids[i] = j.ID
	}
	if err := d.Store.MarkNotEnqueued(ctx, ids); err != nil {
		return r, err
	}
	if lostQueues {
		fresh, done := d.announcing()
		defer done()
		d = fresh
	}
	r.Enqueued = d.Enqueue(ctx, log, missing)
	return r, nil
}

// revive looks up a task a row says Asynq holds and runs it again when it
// is archived. It returns the state the task was in; gone when Redis no
// longer holds it, with lostQueue when Redis lost the queue's name too.
func (d *Dispatcher) revive(queue, taskID string) (state asynq.TaskState, gone, lostQueue bool, err error) {
	info, err := d.Inspector.GetTaskInfo(queue, taskID)
	switch {
	case errors.Is(err, asynq.ErrQueueNotFound):
		return 0, true, true, nil
	case errors.Is(err, asynq.ErrTaskNotFound):
		return 0, true, false, nil
	case err != nil:
		return 0, false, false, fmt.Errorf("%w: %w", ErrQueueUnavailable, err)
	}
	if info.State == asynq.TaskStateArchived {
		err = d.Inspector.RunTask(queue, taskID)
		switch {
		case errors.Is(err, asynq.ErrTaskNotFound):
			return 0, true, false, nil
		case err != nil:
			return 0, false, false, fmt.Errorf("%w: %w", ErrQueueUnavailable, err)
		}
	}
	return info.State, false, false, nil
}

// announcing is d enqueueing through a new client, for after Redis lost
// queues: a new client announces each queue again as it enqueues. done
// closes the client.
func (d *Dispatcher) announcing() (fresh *Dispatcher, done func()) {
	if d.Redis == nil {
		return d, func() {}
	}
	c := *d
	c.Queue = asynq.NewClient(d.Redis)
	return &c, func() { c.Queue.Close() }
}
