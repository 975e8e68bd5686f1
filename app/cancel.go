package app

import (
	"context"
	"log/slog"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// CancelExport cancels export e when it is queued or running. Its batch is
// canceled as any batch is (jobs.Dispatcher.CancelBatch: the task leaves
// the queue, the user's next waiting export takes its place, webhooks hear
// of the batch), and first: the worker takes a canceled job to mean a
// canceled export, so a build that ends meanwhile cannot be kept. It
// returns the export as it is now and whether this call canceled it.
func (a *App) CancelExport(ctx context.Context, log *slog.Logger, e *store.Export) (*store.Export, bool, error) {
	if e.BatchID != nil && (e.Status == store.JobQueued || e.Status == store.JobRunning) {
		if _, _, err := a.Jobs.CancelBatch(ctx, log, e.ProjectID, *e.BatchID); err != nil {
			return nil, false, err
		}
	} else if err := a.Jobs.MarkCanceling(ctx, e.ProjectID); err != nil {
		return nil, false, err
	}
	e, canceled, err := a.store.CancelExport(ctx, e.ID)
	if err != nil || (!canceled && e.Status != store.JobCanceled) {
		return e, false, err
	}
	a.Jobs.DropTask(log, tasks.QueueOf(tasks.TypeExport), tasks.ExportID(e.ID))
	// A run that yielded between steps left its parts; none will run again.
	a.DropExportParts(ctx, log, e.ID)
	if canceled {
		ctx, cancel := jobs.AfterCommit(ctx)
		defer cancel()
		a.ExportChanged(ctx, log, e)
	}
	return e, canceled, nil
}

// DropExportParts deletes what an export's steps drew (blob.ExportPartsPrefix):
// each part is a discard from before it is written, so the export's
// discards name them all. What a delete misses, or a late run writes
// again, the sweeper deletes.
func (a *App) DropExportParts(ctx context.Context, log *slog.Logger, export uuid.UUID) {
	keys, err := a.store.DiscardNow(ctx, blob.ExportPartsPrefix(export))
	if err != nil {
		log.Warn("discard an export's parts; the sweep will delete them later", "export", export, "err", err)
		return
	}
	for _, k := range keys {
		if err := a.Blobs.Delete(ctx, k); err != nil {
			log.Warn("delete an export's part; the sweep will", "export", export, "key", k, "err", err)
			return
		}
	}
}
