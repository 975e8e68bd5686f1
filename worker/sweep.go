package worker

import (
	"context"
	"errors"
	"time"

	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/chain"
	"lightbox/tasks"
)

// Sweep limits: how old files must be before the sweep touches them, and
// how many it takes per run so one run stays short. The job lifecycle's
// own are jobs.Tracker.Sweep's.
const (
	sweepBatch      = 500
	expiredUploadOK = time.Hour       // grace after a URL expires before its row fails
	discardedURLOK  = 5 * time.Minute // a storage server's clock may run behind ours
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

	// Jobs, cluster runs and webhook events first (jobs.Tracker.Sweep).
	errs = append(errs, w.tracker.Sweep(ctx, now))

	// A flusher that died mid-batch leaves items in signing; after a while
	// they go back to pending, and any pending item gets a flush.
	_, err := chain.ReleaseStale(ctx, w.st, chain.StaleAfter)
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
