package jobs

import (
	"context"
	"errors"
	"slices"
	"time"

	"lightbox/store"
	"lightbox/tasks"
)

// Sweep limits: how old work must be before the sweep touches it, and how
// much it takes per run so one run stays short.
const (
	sweepBatch      = 500
	unenqueuedAfter = 30 * time.Second // a commit hands its jobs over at once
	reconcileAfter  = 2 * time.Minute  // default of TrackerConfig.ReconcileAfter
	overdueAfter    = 2 * time.Minute  // a cluster run due this long ago should have started
	stuckRunAfter   = 5 * time.Minute  // past its timeout, a started cluster run should have ended
	unnotifiedAfter = time.Minute      // an event's webhooks are told right after its commit
)

// Sweep repairs what a crash or an outage between two writes leaves of the
// job lifecycle, once a worker's periodic sweep asks (at now): jobs and
// cluster runs committed but never handed over, or whose task Redis lost
// or an outage archived; waiting jobs the caps admit; webhook events whose
// deliveries were never recorded.
func (tr *Tracker) Sweep(ctx context.Context, now time.Time) error {
	var errs []error
	// Queues missing from Asynq's registry mean Redis lost its data: the
	// waiting jobs go back now, not once their rows have been quiet.
	errs = append(errs, tr.noticeLoss(ctx, now))
	// Reconciling first puts jobs whose task Redis lost back among the
	// never-enqueued ones, which the caps then admit in order.
	errs = append(errs, tr.reconcile(ctx, now))
	d := tr.d
	lost, err := d.Store.StrandedJobs(ctx, now.Add(-unenqueuedAfter), sweepBatch)
	errs = append(errs, err)
	n := d.Enqueue(ctx, tr.log, lost)
	waiting, err := d.Store.WaitingUserQueues(ctx, now.Add(-unenqueuedAfter), sweepBatch)
	errs = append(errs, err)
	if n += d.Admit(ctx, tr.log, waiting...); n > 0 {
		tr.log.Info("sweep re-enqueued jobs", "count", n)
	}

	// Cluster runs have no job row: those overdue are compared with Asynq
	// on their own.
	overdue, err := d.Store.OverdueClusterRuns(ctx, now.Add(-overdueAfter), now.Add(-tasks.Timeout(tasks.TypeCluster)-stuckRunAfter), sweepBatch)
	errs = append(errs, err)
	n, err = d.ReconcileClusterRuns(ctx, tr.log, overdue)
	errs = append(errs, err)
	if n > 0 {
		tr.log.Info("sweep put lost cluster runs back", "checked", len(overdue), "count", n)
	}
	runs, err := d.Store.UnenqueuedClusterRuns(ctx, now.Add(-unenqueuedAfter))
	errs = append(errs, err)
	for _, r := range runs {
		errs = append(errs, d.EnqueueClusterRun(ctx, r))
	}

	// A batch, export or asset failure whose webhooks were never told stays
	// so: its state, once committed, is not written again.
	n, err = d.Hooks.NotifyMissed(ctx, tr.log, now.Add(-unnotifiedAfter), sweepBatch)
	errs = append(errs, err)
	if n > 0 {
		tr.log.Info("sweep told webhooks of missed events", "count", n)
	}
	return errors.Join(errs...)
}

// reconcile compares one page of live jobs with their tasks in Asynq (see
// Dispatcher.Reconcile). Each run takes the page after the last one's, so
// a backlog larger than a page is covered over several runs.
func (tr *Tracker) reconcile(ctx context.Context, now time.Time) error {
	tr.reconcileMu.Lock()
	defer tr.reconcileMu.Unlock()
	live, err := tr.d.Store.LiveJobs(ctx, now.Add(-tr.reconcileAfter), tr.reconcileAt, sweepBatch)
	if err != nil {
		return err
	}
	r, err := tr.d.Reconcile(ctx, tr.log, live)
	if err == nil {
		// A page cut short by Redis is read again next time.
		tr.reconcileAt = nil
		if len(live) == sweepBatch {
			last := live[len(live)-1]
			tr.reconcileAt = &store.Cursor{Time: last.CreatedAt, ID: last.ID}
		}
	}
	tr.reconciled(ctx, r)
	return err
}

// reconciled tells of the jobs a reconcile found ended and admits waiting
// jobs into the places they held.
func (tr *Tracker) reconciled(ctx context.Context, r Reconciled) {
	// Several finished jobs may share a user queue; one admission tops it up.
	var uqs []store.UserQueue
	for _, e := range r.Finished {
		tr.JobChanged(ctx, e.Job, e.Batch)
		if e.Batch == nil {
			continue
		}
		if uq := (store.UserQueue{User: e.Batch.UserID, Queue: e.Job.Queue}); !slices.Contains(uqs, uq) {
			uqs = append(uqs, uq)
		}
	}
	tr.d.Admit(ctx, tr.log, uqs...)
	if r.Enqueued+r.Rerun+len(r.Finished) > 0 {
		tr.log.Info("sweep put lost jobs back", "checked", r.Checked, "enqueued", r.Enqueued,
			"rerun", r.Rerun, "finished", len(r.Finished))
	}
}
