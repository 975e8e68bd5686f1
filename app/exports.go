package app

import (
	"context"

	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// Export records export e of e.UserID's with the project:export job that
// builds it, in a batch of its own, and names both in e. An account past
// its exports quota, or at its bytes quota, takes no new export.
func (a *App) Export(ctx context.Context, e *store.Export) error {
	return a.store.WithUsage(ctx, e.UserID, func(tx *store.Store, u *store.Usage) error {
		if err := a.checkQuota(u, ForExport, u.CheckExport(u.Limits(a.Quotas))); err != nil {
			return err
		}
		return RecordExport(ctx, tx, e)
	})
}

// RecordExport is Export's work in tx, without the quota check.
func RecordExport(ctx context.Context, tx *store.Store, e *store.Export) error {
	job, err := jobs.Insert(ctx, tx, tasks.ExportPayload{Job: tasks.NewJob(e.ProjectID), ExportID: e.ID}, jobs.NewBatch(e.UserID, store.BatchExport))
	if err != nil {
		return err
	}
	e.BatchID, e.JobID = job.BatchID, &job.ID
	return tx.CreateExport(ctx, e)
}
