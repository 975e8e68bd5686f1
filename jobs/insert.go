package jobs

import (
	"context"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/tasks"
)

// Insert records the job that runs payload p in tx, the caller's
// transaction (River's InsertTx), so the job exists exactly when the change
// it belongs to does. Once tx commits, its Store hands the job to the queue
// (a Dispatcher's Store, see New): detached from the caller's context and
// within afterCommitTimeout, so a client that hangs up strands nothing. A
// hand-over that fails, or a Store without a Dispatcher, leaves the job to
// the sweep, which finds it recorded and not in the queue.
//
// The row is built from the payload and the task table: its type, queue
// and TaskID, its asset when the payload is about one (tasks.AssetArgs).
// An id recorded already names that job: one that ended runs again.
func Insert(ctx context.Context, tx *store.Store, p tasks.JobArgs, opts ...InsertOption) (store.Job, error) {
	jobs, err := InsertMany(ctx, tx, []tasks.JobArgs{p}, opts...)
	if err != nil {
		return store.Job{}, err
	}
	return jobs[0], nil
}

// InsertMany is Insert for many payloads, in one statement. With no
// payloads it records nothing, not even a NewBatch.
func InsertMany(ctx context.Context, tx *store.Store, ps []tasks.JobArgs, opts ...InsertOption) ([]store.Job, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	var o insertOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.newBatch != nil {
		b, err := tx.CreateBatch(ctx, ps[0].Ref().ProjectID, o.newBatch.user, o.newBatch.kind)
		if err != nil {
			return nil, err
		}
		o.batch = &b.ID
	}
	rows := make([]store.Job, len(ps))
	for i, p := range ps {
		rows[i] = row(p, o.batch)
	}
	return tx.InsertJobs(ctx, rows)
}

// InsertOption says where Insert puts a job.
type InsertOption func(*insertOptions)

type insertOptions struct {
	batch    *uuid.UUID
	newBatch *struct {
		user uuid.UUID
		kind string
	}
}

// InBatch puts the jobs in batch, which counts them.
func InBatch(batch uuid.UUID) InsertOption {
	return func(o *insertOptions) { o.batch = &batch }
}

// NewBatch puts the jobs in a new batch of kind (store.BatchUpload…),
// started by user in the jobs' project.
func NewBatch(user uuid.UUID, kind string) InsertOption {
	return func(o *insertOptions) {
		o.newBatch = &struct {
			user uuid.UUID
			kind string
		}{user, kind}
	}
}

// row is the job row that records the task p describes, in batch.
func row(p tasks.JobArgs, batch *uuid.UUID) store.Job {
	ref := p.Ref()
	j := store.Job{ID: ref.JobID, ProjectID: ref.ProjectID, BatchID: batch,
		Type: p.Kind(), Queue: tasks.QueueOf(p.Kind()), TaskID: p.TaskID(), Payload: tasks.Encode(p)}
	if a, ok := p.(tasks.AssetArgs); ok {
		asset := a.Asset()
		j.AssetID = &asset
	}
	return j
}

// afterCommitTimeout bounds the work that follows a commit once it no
// longer ends with its request: a Redis that does not answer within it
// leaves the jobs to the sweeper, as a failed enqueue always does.
const afterCommitTimeout = 10 * time.Second

// AfterCommit is ctx for work that follows a commit: it keeps ctx's values
// but not its end, so a client that hangs up cannot cut short what its
// request committed, and it ends after a bound of its own.
func AfterCommit(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), afterCommitTimeout)
}

// handOver is the Store's commit hook: it hands the jobs a transaction
// recorded to the queue once it has committed, detached (AfterCommit).
func (d *Dispatcher) handOver(ctx context.Context, jobs []store.Job) {
	ctx, cancel := AfterCommit(ctx)
	defer cancel()
	d.Enqueue(ctx, d.Log, jobs)
}
