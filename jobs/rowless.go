package jobs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"lightbox/store"
	"lightbox/tasks"
)

// Tasks without job rows: a project's cluster runs, recorded in
// cluster_runs, and the chain flush, which the attestation queue stands
// for.

// EnqueueClusterRun hands a scheduled cluster run to the queue, to start
// when it is due, and notes that it arrived.
func (d *Dispatcher) EnqueueClusterRun(ctx context.Context, run store.ClusterRun) error {
	t := tasks.NewTask(tasks.ClusterPayload{ProjectID: run.ProjectID, Run: run.Run})
	if err := tasks.Enqueue(ctx, d.Queue, t, asynq.ProcessIn(max(0, time.Until(run.ScheduledFor)))); err != nil {
		return err
	}
	return d.Store.MarkClusterEnqueued(ctx, run.ProjectID, run.Run)
}

// ReconcileClusterRuns compares cluster runs enqueued but overdue (see
// store.OverdueClusterRuns) with Asynq's state of their tasks, as
// Reconcile does jobs: a task Redis lost is enqueued again, and an
// archived one (its start failed through every retry) runs again.
// Otherwise the waiting run would absorb every later request and the
// project would never cluster again. It returns how many runs it put back
// and stops at the first question Redis does not answer.
func (d *Dispatcher) ReconcileClusterRuns(ctx context.Context, log *slog.Logger, runs []store.ClusterRun) (int, error) {
	refs := make([]taskRef, len(runs))
	for i, r := range runs {
		refs[i] = taskRef{tasks.QueueOf(tasks.TypeCluster), tasks.ClusterPayload{ProjectID: r.ProjectID, Run: r.Run}.TaskID()}
	}
	c, err := d.compare(refs)
	if err != nil {
		return 0, err
	}
	for _, i := range c.rerun {
		log.Info("sweep runs again an archived cluster run", "project", runs[i].ProjectID, "run", runs[i].Run)
	}
	d, done := d.announcing(c.queuesLost)
	defer done()
	var errs []error
	n := len(c.rerun)
	for _, i := range c.missing {
		if err := d.EnqueueClusterRun(ctx, runs[i]); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// FlushChain makes sure a chain flush is coming. One that waits already
// will do (the flusher debounces itself by TaskID); but an archived flush,
// its retries spent (a long Postgres outage, say), holds the TaskID for
// good, so no enqueue would ever replace it: it runs again instead.
func (d *Dispatcher) FlushChain(ctx context.Context) error {
	_, err := d.Queue.EnqueueContext(ctx, tasks.NewChainFlush())
	if !tasks.IDInUse(err) {
		return err
	}
	// Gone meanwhile is fine too: it finished, after taking what was pending.
	_, err = d.compare([]taskRef{{tasks.QueueOf(tasks.TypeChainFlush), tasks.ChainFlushID}})
	return err
}
