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
// Reconcile does jobs, which cluster runs do not have: a task Redis lost
// is enqueued again, and an archived one (its start failed through every
// retry) runs again. Otherwise the waiting run would absorb every later
// request and the project would never cluster again. It returns how many
// runs it put back and stops at the first question Redis does not answer.
func (d *Dispatcher) ReconcileClusterRuns(ctx context.Context, log *slog.Logger, runs []store.ClusterRun) (int, error) {
	var missing []store.ClusterRun
	lostQueues := false
	n := 0
	for _, r := range runs {
		taskID := tasks.ClusterPayload{ProjectID: r.ProjectID, Run: r.Run}.TaskID()
		state, gone, lostQueue, err := d.revive(tasks.QueueOf(tasks.TypeCluster), taskID)
		switch {
		case err != nil:
			return n, err
		case gone:
			lostQueues = lostQueues || lostQueue
			missing = append(missing, r)
		case state == asynq.TaskStateArchived:
			log.Info("sweep runs again an archived cluster run", "project", r.ProjectID, "run", r.Run)
			n++
		}
	}
	if lostQueues {
		fresh, done := d.announcing()
		defer done()
		d = fresh
	}
	var errs []error
	for _, r := range missing {
		if err := d.EnqueueClusterRun(ctx, r); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
