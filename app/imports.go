package app

import (
	"context"

	"github.com/google/uuid"

	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// Import records a URL import of owner's into project: an asset per URL
// waiting for its bytes and the asset:download job that fetches it, all in
// a new import batch, whose jobs it returns. An account at its bytes quota
// already takes none (sizes are known only once fetched, where each
// download is checked).
func (a *App) Import(ctx context.Context, owner, project uuid.UUID, items []store.NewImport) ([]store.Job, error) {
	var recorded []store.Job
	err := a.store.WithUsage(ctx, owner, func(tx *store.Store, u *store.Usage) error {
		if err := a.checkQuota(u, ForImport, u.CheckImport(u.Limits(a.Quotas))); err != nil {
			return err
		}
		var err error
		recorded, err = RecordImport(ctx, tx, owner, project, items)
		return err
	})
	return recorded, err
}

// RecordImport is Import's work in tx, without the quota check.
func RecordImport(ctx context.Context, tx *store.Store, owner, project uuid.UUID, items []store.NewImport) ([]store.Job, error) {
	if err := tx.AddImports(ctx, project, items); err != nil {
		return nil, err
	}
	downloads := make([]tasks.JobArgs, len(items))
	for i, it := range items {
		downloads[i] = tasks.DownloadPayload{Job: tasks.NewJob(project), AssetID: it.AssetID, URL: it.URL}
	}
	return jobs.InsertMany(ctx, tx, downloads, jobs.NewBatch(owner, store.BatchImport))
}
