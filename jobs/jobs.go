package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/store"
	"lightbox/tasks"
)

// ErrQueueUnavailable says Redis did not answer a question about a task.
var ErrQueueUnavailable = errors.New("the queue does not answer")

// Blobs is what finalizing needs of the blob store: uploads are checked,
// discarded copies deleted.
type Blobs interface {
	Stat(ctx context.Context, key string) (blob.Info, error)
	Delete(ctx context.Context, key string) error
}

// Config is what a Dispatcher works with.
type Config struct {
	Store *store.Store
	Queue *asynq.Client
	// Inspector answers what Asynq holds of a task: to cancel, rerun and
	// reconcile.
	Inspector *asynq.Inspector
	// Redis, when set, lets Reconcile register queues again after Redis
	// lost everything: a client announces a queue to the Inspector only
	// on its first enqueue to it, so the long-lived Queue never does again.
	Redis asynq.RedisConnOpt
	Blobs Blobs
	// Windows bound how many jobs of one batch, and of one user's batches
	// in each queue, are handed over at once; the rest wait in Postgres,
	// and the worker releases them as jobs end.
	Windows store.Windows
	// Log hears of hand-overs that failed, which the sweep repeats.
	Log *slog.Logger
}

// Dispatcher hands recorded jobs to the queue, takes them back out and runs
// them again.
type Dispatcher struct {
	Config
}

// New returns a Dispatcher working with c. Its Store is c.Store with a
// commit hook: every transaction it runs hands the jobs it recorded
// (Insert) to the queue once committed.
func New(c Config) *Dispatcher {
	d := &Dispatcher{Config: c}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	d.Store = c.Store.WithHandOver(d.handOver)
	return d
}

// Enqueue hands jobs to the queue and notes which arrived: jobs of no
// batch, or of a batch no longer running, at once; a running batch's jobs
// as far as the windows allow (see Release).
// Failures are logged, not returned: the jobs are safe in Postgres and the
// sweeper enqueues them again; TaskIDs make a second enqueue of a live
// task a no-op. It returns how many arrived.
func (d *Dispatcher) Enqueue(ctx context.Context, log *slog.Logger, jobs []store.Job) int {
	var now, batched []store.Job
	for _, j := range jobs {
		if j.BatchID == nil {
			now = append(now, j)
		} else {
			batched = append(batched, j)
		}
	}
	var shares []store.Share
	if len(batched) > 0 {
		var outside []store.Job
		var err error
		shares, outside, err = d.Store.SharesOf(ctx, batched)
		if err != nil {
			log.Warn("look up whose batch jobs these are; the sweeper will enqueue them", "err", err)
		}
		// No release walks a batch that is not running (a failed job of a
		// cancelled batch run again, say): its jobs go as they are.
		now = append(now, outside...)
	}
	return d.enqueue(ctx, log, now) + d.Release(ctx, log, shares...)
}

// Release tops each share of the queue up with its user's waiting batch
// jobs, as far as the windows allow (store.ReleasableJobs), and returns
// how many it handed over. Two callers releasing the same job at once
// are harmless: its TaskID makes the second enqueue a no-op.
func (d *Dispatcher) Release(ctx context.Context, log *slog.Logger, shares ...store.Share) int {
	n := 0
	for _, sh := range shares {
		jobs, err := d.Store.ReleasableJobs(ctx, sh, time.Now().Add(time.Minute), d.Windows)
		if err != nil {
			log.Warn("release batch jobs; the sweeper will", "user", sh.User, "queue", sh.Queue, "err", err)
			continue
		}
		n += d.enqueue(ctx, log, jobs)
	}
	return n
}

// enqueue hands jobs to the queue as they are.
func (d *Dispatcher) enqueue(ctx context.Context, log *slog.Logger, jobs []store.Job) int {
	if len(jobs) == 0 {
		return 0
	}
	ts := make([]*asynq.Task, len(jobs))
	for i, j := range jobs {
		ts[i] = tasks.New(j.Type, j.Payload, j.TaskID)
	}
	var done []uuid.UUID
	for i, err := range tasks.EnqueueAll(ctx, d.Queue, ts) {
		if tasks.IsTaken(err) {
			err = d.taken(ctx, jobs[i], ts[i])
		}
		if err != nil {
			log.Warn("enqueue failed; the sweeper will retry", "job", jobs[i].ID, "err", err)
			continue
		}
		done = append(done, jobs[i].ID)
	}
	if err := d.Store.MarkEnqueued(ctx, done); err != nil {
		log.Warn("mark enqueued", "err", err)
	}
	return len(done)
}

// taken settles an enqueue of j that found its TaskID taken. Usually the
// task is j's own, enqueued before (at-least-once callers enqueue again
// freely). But two jobs can share a TaskID (an edit applied again over its
// latest version), and an archived task of the earlier job would hold it
// for good: j would never run, and reconciling j would run the earlier
// job's task again. Such a task, finished with, makes room for j's.
// j's own task, even archived, is left alone: j may have just ended, its
// state not yet written (Rerun clears the way itself).
func (d *Dispatcher) taken(ctx context.Context, j store.Job, t *asynq.Task) error {
	info, err := d.Inspector.GetTaskInfo(j.Queue, j.TaskID)
	if errors.Is(err, asynq.ErrTaskNotFound) {
		return tasks.Enqueue(ctx, d.Queue, t) // gone meanwhile
	}
	if err != nil {
		return err
	}
	var owner tasks.Job
	if json.Unmarshal(info.Payload, &owner) != nil || owner.JobID == j.ID || !ended(info.State) {
		return nil
	}
	if err := d.Inspector.DeleteTask(j.Queue, j.TaskID); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
		return err
	}
	return tasks.Enqueue(ctx, d.Queue, t)
}

// ended is a task Asynq keeps after its last run: archived (failed for
// good) or completed (kept for its retention). It still holds its TaskID.
func ended(s asynq.TaskState) bool {
	return s == asynq.TaskStateArchived || s == asynq.TaskStateCompleted
}

// FlushChain makes sure a chain flush is coming. One that waits already
// will do (the flusher debounces itself by TaskID); but an archived flush,
// its retries spent (a long Postgres outage, say), holds the TaskID for
// good, so no enqueue would ever replace it: it runs again instead.
func (d *Dispatcher) FlushChain(ctx context.Context) error {
	_, err := d.Queue.EnqueueContext(ctx, tasks.NewChainFlush())
	if !tasks.IsTaken(err) {
		return err
	}
	// Gone meanwhile is fine too: it finished, after taking what was pending.
	_, _, _, err = d.revive(tasks.QueueOf(tasks.TypeChainFlush), tasks.ChainFlushID)
	return err
}

// Rerun puts jobs back to queued and runs their tasks again from the
// jobs' recorded payloads under the same TaskIDs, a batch's as far as the
// windows allow (see Enqueue); the ended tasks, archived or kept as
// completed, are deleted first. An enqueue that fails is left to the
// sweeper, which finds the job queued and never enqueued. It returns the
// ids of the jobs put back, and the jobs that cannot be: their failed
// asset's bytes were uploaded again as another asset, which stays the
// project's original (the asset's error then says so).
func (d *Dispatcher) Rerun(ctx context.Context, log *slog.Logger, jobs []store.Job) (retried []uuid.UUID, dups []Duplicate, err error) {
	retried = []uuid.UUID{}
	var requeued []store.Job
	for _, j := range jobs {
		err := d.Store.RequeueJob(ctx, j.ID, tasks.FailsAsset(j.Type))
		var dup *store.DuplicateError
		if errors.As(err, &dup) {
			dups = append(dups, Duplicate{JobID: j.ID, AssetID: *j.AssetID, DuplicateOf: dup.Of})
			err = d.Store.FailAsset(ctx, *j.AssetID, "duplicate",
				fmt.Sprintf("The same photo was uploaded again as asset %s, which is kept; this one cannot run again.", dup.Of))
		}
		if err != nil {
			// Those already put back are committed: they go now all the same.
			d.handOver(ctx, requeued)
			return retried, dups, err
		}
		if dup != nil {
			continue
		}
		// An ended task holds the TaskID: it makes way for a new run with
		// a full set of retries. A live one (a retry clicked twice) stays.
		if info, err := d.Inspector.GetTaskInfo(j.Queue, j.TaskID); err == nil && ended(info.State) {
			if err := d.Inspector.DeleteTask(j.Queue, j.TaskID); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
				log.Warn("retry: remove the ended task", "job", j.ID, "err", err)
			}
		}
		requeued = append(requeued, j)
		retried = append(retried, j.ID)
	}
	// Through the windows like new work: retrying a whole failed upload must
	// not put it ahead of the user's other batches, nor of other users'.
	d.handOver(ctx, requeued)
	return retried, dups, nil
}

// Duplicate is a failed job Rerun does not run again: its asset's bytes
// are live as another asset of the project.
type Duplicate struct {
	JobID       uuid.UUID `json:"jobId"`
	AssetID     uuid.UUID `json:"assetId"`
	DuplicateOf uuid.UUID `json:"duplicateOf"`
}

// Drop takes the jobs' tasks out of the queue: a waiting task is deleted, a
// running one is cancelled and its handler sees its context end. A task
// never enqueued, or already gone, needs nothing.
func (d *Dispatcher) Drop(log *slog.Logger, jobs []store.Job) {
	for _, j := range jobs {
		d.DropTask(log, j.Queue, j.TaskID)
	}
}

// DropTask takes one task out of the queue, as Drop does.
func (d *Dispatcher) DropTask(log *slog.Logger, queue, taskID string) {
	info, err := d.Inspector.GetTaskInfo(queue, taskID)
	if err != nil {
		return
	}
	if info.State == asynq.TaskStateActive {
		err = d.Inspector.CancelProcessing(taskID)
	} else {
		err = d.Inspector.DeleteTask(queue, taskID)
	}
	if err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
		log.Warn("cancel task", "task", taskID, "err", err)
	}
}
