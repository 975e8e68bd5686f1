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
//     over again; the job stops counting under its batch's caps first, so
//     a batch's lost jobs cannot hold the places the rest wait for;
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
	var checked []store.Job
	var refs []taskRef
	for _, j := range jobs {
		if tasks.HasJob(j.Type) && j.TaskID != "" {
			checked = append(checked, j)
			refs = append(refs, taskRef{j.Queue, j.TaskID})
		}
	}
	r.Checked = len(checked)
	c, err := d.compare(refs)
	if err != nil {
		return r, err
	}
	for _, i := range c.rerun {
		log.Info("sweep runs again a task archived while its job was live", "job", checked[i].ID, "task", checked[i].TaskID)
	}
	r.Rerun = len(c.rerun)
	for _, i := range c.completed {
		job, batch, err := d.Store.JobFinished(ctx, checked[i].ID, store.JobDone, "", "")
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return r, err
		}
		if err == nil {
			r.Finished = append(r.Finished, Ended{Job: job, Batch: batch})
		}
	}
	if len(c.missing) == 0 {
		return r, nil
	}
	missing := make([]store.Job, len(c.missing))
	ids := make([]uuid.UUID, len(c.missing))
	for k, i := range c.missing {
		missing[k], ids[k] = checked[i], checked[i].ID
	}
	if err := d.Store.MarkNotEnqueued(ctx, ids); err != nil {
		return r, err
	}
	d, done := d.announcing(c.queuesLost)
	defer done()
	r.Enqueued = d.Enqueue(ctx, log, missing)
	return r, nil
}

// taskRef names a task a row says Asynq holds.
type taskRef struct{ queue, taskID string }

// compared is what Asynq holds of tasks rows say it holds, by index.
type compared struct {
	missing   []int // gone from Redis
	rerun     []int // archived, and now run again
	completed []int // completed, kept for their retention
	// queuesLost: Redis lost the name of a missing task's queue too.
	queuesLost bool
}

// compare looks up each task and runs again those that are archived. It
// stops at the first question Redis does not answer.
func (d *Dispatcher) compare(refs []taskRef) (compared, error) {
	var c compared
	for i, ref := range refs {
		info, err := d.Inspector.GetTaskInfo(ref.queue, ref.taskID)
		switch {
		case errors.Is(err, asynq.ErrQueueNotFound):
			c.missing, c.queuesLost = append(c.missing, i), true
			continue
		case errors.Is(err, asynq.ErrTaskNotFound):
			c.missing = append(c.missing, i)
			continue
		case err != nil:
			return c, fmt.Errorf("%w: %w", ErrQueueUnavailable, err)
		}
		switch info.State {
		case asynq.TaskStateArchived:
			err := d.Inspector.RunTask(ref.queue, ref.taskID)
			switch {
			case errors.Is(err, asynq.ErrTaskNotFound):
				c.missing = append(c.missing, i)
			case err != nil:
				return c, fmt.Errorf("%w: %w", ErrQueueUnavailable, err)
			default:
				c.rerun = append(c.rerun, i)
			}
		case asynq.TaskStateCompleted:
			c.completed = append(c.completed, i)
		}
	}
	return c, nil
}

// announcing is d enqueueing through a new client when Redis lost queues
// (queuesLost): a new client announces each queue again as it enqueues.
// done closes the client.
func (d *Dispatcher) announcing(queuesLost bool) (fresh *Dispatcher, done func()) {
	if !queuesLost || d.QueueRedis == nil {
		return d, func() {}
	}
	c := *d
	c.Queue = asynq.NewClient(d.QueueRedis)
	return &c, func() { c.Queue.Close() }
}
