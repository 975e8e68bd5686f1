package worker

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/chain"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// Sweep limits: how old work must be before the sweeper touches it, and how
// much it takes per run so one run stays short.
const (
	sweepBatch      = 500
	unenqueuedAfter = 30 * time.Second // finalize enqueues right after its commit
	reconcileAfter  = 2 * time.Minute  // a job's row changes as its task runs; a quiet one gets checked
	overdueAfter    = 2 * time.Minute  // a cluster run due this long ago should have started
	stuckRunAfter   = 5 * time.Minute  // past its timeout, a started cluster run should have ended
	expiredUploadOK = time.Hour        // grace after a URL expires before its row fails
	discardedURLOK  = 5 * time.Minute  // a storage server's clock may run behind ours
	unnotifiedAfter = time.Minute      // an event's webhooks are told right after its commit
)

func init() { handle(tasks.TypeSweep, (*Worker).sweep) }

// sweep repairs what a crash or an outage between two writes leaves behind:
// jobs and cluster runs committed but never enqueued, or whose task Redis
// lost or an outage archived, attestations stuck in signing or never
// flushed, webhook events whose deliveries were never recorded, uploads
// never finalized, files discarded at finalize or by a delete that a late
// PUT or task brought back, files a task wrote that no row came to name,
// and expired export files.
func (w *Worker) sweep(ctx context.Context, _ *asynq.Task) error {
	now := time.Now()
	var errs []error

	// Queues missing from Asynq's registry mean Redis lost its data: the
	// waiting jobs go back now, not once their rows have been quiet.
	errs = append(errs, w.noticeLoss(ctx, now))
	// Reconciling first puts jobs whose task Redis lost back among the
	// never-enqueued ones, which the windows then release in order.
	errs = append(errs, w.reconcile(ctx, now))
	lost, err := w.st.StrandedJobs(ctx, now.Add(-unenqueuedAfter), sweepBatch)
	errs = append(errs, err)
	n := w.jobs.Enqueue(ctx, w.log, lost)
	waiting, err := w.st.WaitingShares(ctx, now.Add(-unenqueuedAfter), sweepBatch)
	errs = append(errs, err)
	if n += w.jobs.Release(ctx, w.log, waiting...); n > 0 {
		w.log.Info("sweep re-enqueued jobs", "count", n)
	}

	// Cluster runs have no job row: those overdue are compared with Asynq
	// on their own.
	overdue, err := w.st.OverdueClusterRuns(ctx, now.Add(-overdueAfter), now.Add(-tasks.Timeout(tasks.TypeCluster)-stuckRunAfter), sweepBatch)
	errs = append(errs, err)
	n, err = w.jobs.ReconcileClusterRuns(ctx, w.log, overdue)
	errs = append(errs, err)
	if n > 0 {
		w.log.Info("sweep put lost cluster runs back", "checked", len(overdue), "count", n)
	}
	runs, err := w.st.UnenqueuedClusterRuns(ctx, now.Add(-unenqueuedAfter))
	errs = append(errs, err)
	for _, r := range runs {
		errs = append(errs, w.jobs.EnqueueClusterRun(ctx, r))
	}

	// A batch, export or asset failure whose webhooks were never told stays
	// so: its state, once committed, is not written again.
	n, err = w.jobs.NotifyMissed(ctx, w.log, now.Add(-unnotifiedAfter), sweepBatch)
	errs = append(errs, err)
	if n > 0 {
		w.log.Info("sweep told webhooks of missed events", "count", n)
	}

	// A flusher that died mid-batch leaves items in signing; after a while
	// they go back to pending, and any pending item gets a flush.
	_, err = chain.ReleaseStale(ctx, w.st, chain.StaleAfter)
	errs = append(errs, err)
	if counts, err := chain.CountQueue(ctx, w.st); err != nil {
		errs = append(errs, err)
	} else if counts.Pending+counts.Failed > 0 {
		errs = append(errs, w.jobs.FlushChain(ctx))
	}

	// A process killed mid-write leaves a temporary file; uploads can run
	// for hours on slow links, so only day-old ones go.
	if d, ok := w.blobs.(blob.StaleRemover); ok {
		_, err := d.RemoveStale(ctx, 24*time.Hour)
		errs = append(errs, err)
	}

	keys, err := w.st.ExpiredUploads(ctx, now.Add(-expiredUploadOK), sweepBatch)
	errs = append(errs, err)
	for _, k := range keys {
		errs = append(errs, w.blobs.Delete(ctx, k))
	}
	if len(keys) > 0 {
		w.log.Info("sweep failed expired uploads", "count", len(keys))
	}

	errs = append(errs, w.deleteDiscards(ctx, now.Add(-discardedURLOK)))

	exports, err := w.st.ExpiredExports(ctx, now, sweepBatch)
	errs = append(errs, err)
	for _, e := range exports {
		errs = append(errs, w.expireExport(ctx, e))
	}
	errs = append(errs, w.purgeExpired(ctx))
	return errors.Join(errs...)
}

// deleteDiscards deletes for good the files discarded (see DueDiscards)
// that nothing could write after cutoff: finalize, the delete task or the
// task that wrote one deleted them at once, but an S3 URL or a task still
// running can put one back, that first delete may have failed, and a
// task that died did not make it.
func (w *Worker) deleteDiscards(ctx context.Context, cutoff time.Time) error {
	keys, err := w.st.DueDiscards(ctx, cutoff, sweepBatch)
	if err != nil {
		return err
	}
	var errs []error
	deleted := keys[:0:0]
	for _, k := range keys {
		if err := w.blobs.Delete(ctx, k); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, k)
	}
	return errors.Join(append(errs, w.st.ForgetDiscards(ctx, deleted, cutoff))...)
}

// reconcile compares one page of live jobs with their tasks in Asynq (see
// jobs.Dispatcher.Reconcile). Each run takes the page after the last one's,
// so a backlog larger than a page is covered over several runs.
func (w *Worker) reconcile(ctx context.Context, now time.Time) error {
	w.reconcileMu.Lock()
	defer w.reconcileMu.Unlock()
	live, err := w.st.LiveJobs(ctx, now.Add(-reconcileAfter), w.reconcileAt, sweepBatch)
	if err != nil {
		return err
	}
	r, err := w.jobs.Reconcile(ctx, w.log, live)
	if err == nil {
		// A page cut short by Redis is read again next time.
		w.reconcileAt = nil
		if len(live) == sweepBatch {
			last := live[len(live)-1]
			w.reconcileAt = &store.Cursor{Time: last.CreatedAt, ID: last.ID}
		}
	}
	w.reconciled(ctx, r)
	return err
}

// reconciled tells of the jobs a reconcile found ended and releases the
// places they held.
func (w *Worker) reconciled(ctx context.Context, r jobs.Reconciled) {
	// Several finished jobs may share a user's share of a queue; one
	// release tops it up.
	var shares []store.Share
	for _, e := range r.Finished {
		w.jobChanged(ctx, e.Job, e.Batch)
		if e.Batch == nil {
			continue
		}
		if sh := (store.Share{User: e.Batch.UserID, Queue: e.Job.Queue}); !slices.Contains(shares, sh) {
			shares = append(shares, sh)
		}
	}
	w.jobs.Release(ctx, w.log, shares...)
	if r.Enqueued+r.Rerun+len(r.Finished) > 0 {
		w.log.Info("sweep put lost jobs back", "checked", r.Checked, "enqueued", r.Enqueued,
			"rerun", r.Rerun, "finished", len(r.Finished))
	}
}

// lateWrites is how long past its task's timeout a run may still be
// publishing a file it wrote, such as an S3 upload completing.
const lateWrites = 5 * time.Minute

// discardUntilNamed records key, which a run of a task of type typ is about
// to write, as a discard due once that run can no longer write it. The
// store drops the discard where a row comes to name the file; until then,
// a run that dies or gives the file up leaves it to the sweeper.
func (w *Worker) discardUntilNamed(ctx context.Context, typ, key string) error {
	return w.st.DiscardAfter(ctx, []string{key}, time.Now().Add(tasks.Timeout(typ)+lateWrites))
}

// dropLate deletes a file its run wrote too late for a row to name it (the
// store answered ErrDiscardDue). It is discarded again first: the sweeper
// may have deleted and forgotten the key before the file was written, and
// this delete may fail.
func (w *Worker) dropLate(ctx context.Context, key string) {
	if err := w.st.DiscardAfter(ctx, []string{key}, time.Now()); err != nil {
		w.log.Warn("discard a file written too late", "key", key, "err", err)
	}
	if err := w.blobs.Delete(ctx, key); err != nil {
		w.log.Warn("delete a file written too late", "key", key, "err", err)
	}
}
