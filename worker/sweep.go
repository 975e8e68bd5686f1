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

// Sweep limits: how old work must be before the sweeper touches it, and how
// much it takes per run so one run stays short.
const (
	sweepBatch      = 500
	unenqueuedAfter = 30 * time.Second // finalize enqueues right after its commit
	stalledAfter    = 2 * time.Minute  // an uploaded asset normally starts within seconds
	expiredUploadOK = time.Hour        // grace after a URL expires before its row fails
)

// sweep repairs what a crash or an outage between two writes leaves behind:
// jobs committed but never enqueued, uploaded assets whose task was lost,
// cluster runs scheduled but never enqueued, attestations stuck in signing
// or never flushed, uploads never finalized, and expired export files.
func (w *Worker) sweep(ctx context.Context, _ *asynq.Task) error {
	now := time.Now()
	var errs []error

	lost, err := w.st.ReleasableJobs(ctx, nil, now.Add(-unenqueuedAfter), w.cfg.BatchWindow, sweepBatch)
	errs = append(errs, err)
	stalled, err := w.st.StalledIngests(ctx, now.Add(-stalledAfter), sweepBatch)
	errs = append(errs, err)
	if n := w.jobs.Enqueue(ctx, w.log, append(lost, stalled...)); n > 0 {
		w.log.Info("sweep re-enqueued jobs", "count", n)
	}

	runs, err := w.st.UnenqueuedClusterRuns(ctx, now.Add(-unenqueuedAfter))
	errs = append(errs, err)
	for _, r := range runs {
		errs = append(errs, w.enqueueClusterRun(ctx, r))
	}

	// A flusher that died mid-batch leaves items in signing; after a while
	// they go back to pending, and any pending item gets a flush.
	_, err = chain.ReleaseStale(ctx, w.st, chain.StaleAfter)
	errs = append(errs, err)
	if counts, err := chain.CountQueue(ctx, w.st); err != nil {
		errs = append(errs, err)
	} else if counts.Pending+counts.Failed > 0 {
		errs = append(errs, tasks.Enqueue(ctx, w.queue, tasks.NewChainFlush()))
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

	exports, err := w.st.ExpiredExports(ctx, now, sweepBatch)
	errs = append(errs, err)
	for _, e := range exports {
		errs = append(errs, w.expireExport(ctx, e))
	}
	errs = append(errs, w.purgeExpired(ctx))
	return errors.Join(errs...)
}
