// Package dispatch provides the hand-over of jobs recorded in Postgres to
// the Asynq queue, shared by the server and the worker: jobs are committed
// first and enqueued after, so a lost enqueue leaves a job the sweeper
// finds, never work that nobody recorded.
package dispatch

import (
	"context"
	"log/slog"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/store"
	"lightbox/tasks"
)

// Dispatcher enqueues recorded jobs.
type Dispatcher struct {
	Store *store.Store
	Queue *asynq.Client
	Log   *slog.Logger
	// Window is the most jobs of one batch handed over at once (0: all);
	// the worker releases the rest as the batch's jobs end.
	Window int
}

// Enqueue hands jobs to the queue, at most Window of each batch, and notes
// which arrived. Failures are logged, not returned: the jobs are safe in
// Postgres and the sweeper enqueues them again; TaskIDs make a second
// enqueue of a live task a no-op. It returns how many arrived.
func (d *Dispatcher) Enqueue(ctx context.Context, jobs []store.Job) int {
	jobs = firstOfEachBatch(jobs, d.Window)
	if len(jobs) == 0 {
		return 0
	}
	ts := make([]*asynq.Task, len(jobs))
	for i, j := range jobs {
		ts[i] = tasks.New(j.Type, j.Payload, j.TaskID)
	}
	var done []uuid.UUID
	for i, err := range tasks.EnqueueAll(ctx, d.Queue, ts) {
		if err != nil {
			d.Log.Warn("enqueue failed; the sweeper will retry", "job", jobs[i].ID, "err", err)
			continue
		}
		done = append(done, jobs[i].ID)
	}
	if err := d.Store.MarkEnqueued(ctx, done); err != nil {
		d.Log.Warn("mark enqueued", "err", err)
	}
	return len(done)
}

// firstOfEachBatch keeps the first window jobs of every batch (all when
// window is 0).
func firstOfEachBatch(jobs []store.Job, window int) []store.Job {
	if window <= 0 {
		return jobs
	}
	seen := map[uuid.UUID]int{}
	out := jobs[:0:0]
	for _, j := range jobs {
		if j.BatchID != nil {
			if seen[*j.BatchID] >= window {
				continue
			}
			seen[*j.BatchID]++
		}
		out = append(out, j)
	}
	return out
}

// IngestJob builds the job row of an accepted asset's ingest, for
// store.FinalizeUploads and store.Reprocess.
func IngestJob(project uuid.UUID) store.JobSpec {
	return func(asset, batch, job uuid.UUID) store.Job {
		t := tasks.NewIngest(tasks.IngestPayload{Job: tasks.Job{JobID: job, ProjectID: project}, AssetID: asset})
		return store.Job{ID: job, ProjectID: project, AssetID: &asset, BatchID: &batch, Type: t.Type(),
			Queue: tasks.QueueOf(t.Type()), TaskID: tasks.IngestID(asset), Payload: t.Payload()}
	}
}
