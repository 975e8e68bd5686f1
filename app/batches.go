package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/jobs"
	"lightbox/store"
)

// BatchJSON is a batch as the API answers it and as its batch.updated
// events carry it: one shape for both, so a view updates from an event as
// from a fetch.
type BatchJSON struct {
	ID          string     `json:"id"`
	ProjectID   string     `json:"projectId"`
	Kind        string     `json:"kind"`
	Status      string     `json:"status"`
	Total       int        `json:"total"`
	Completed   int        `json:"completed"`
	Failed      int        `json:"failed"`
	CreatedAt   time.Time  `json:"createdAt"`
	CompletedAt *time.Time `json:"completedAt"`
}

// BatchJSONOf is b in its JSON shape.
func BatchJSONOf(b *store.Batch) BatchJSON {
	return BatchJSON{ID: b.ID.String(), ProjectID: b.ProjectID.String(), Kind: b.Kind, Status: b.Status, Total: b.Total,
		Completed: b.Completed, Failed: b.Failed, CreatedAt: b.CreatedAt.UTC(), CompletedAt: b.CompletedAt}
}

// CancelBatch cancels the jobs of project's batch that have not ended
// (jobs.Dispatcher.CancelBatch) and tells the batch's open views its new
// state, since no job of it will report again. It returns the canceled
// jobs and the batch as it is now.
func (a *App) CancelBatch(ctx context.Context, log *slog.Logger, project, batch uuid.UUID) ([]uuid.UUID, *store.Batch, error) {
	canceled, b, err := a.Jobs.CancelBatch(ctx, log, project, batch)
	if err != nil {
		return nil, nil, err
	}
	a.batchChanged(ctx, log, b)
	return canceled, b, nil
}

// RetryJobs runs failed jobs of owner's batch again
// (jobs.Dispatcher.Rerun) and, when any runs again, tells the batch's open
// views its new state: the requeue recounted it, and no job reports before
// it runs.
// It returns the jobs that run again and those whose asset was uploaded
// again meanwhile, which cannot.
func (a *App) RetryJobs(ctx context.Context, log *slog.Logger, owner, batch uuid.UUID, failed []store.Job) ([]uuid.UUID, []jobs.Duplicate, error) {
	retried, dups, err := a.Jobs.Rerun(ctx, log, failed)
	if err != nil || len(retried) == 0 {
		return retried, dups, err
	}
	if b, err := a.store.Batch(ctx, owner, batch); err != nil {
		log.Warn("read a retried batch to tell its views", "batch", batch, "err", err)
	} else {
		a.batchChanged(ctx, log, b)
	}
	return retried, dups, nil
}

// batchChanged tells the batch's open views its new state.
func (a *App) batchChanged(ctx context.Context, log *slog.Logger, b *store.Batch) {
	a.publish(ctx, log, events.BatchUpdated, b.ProjectID, b.ID, BatchJSONOf(b))
}
