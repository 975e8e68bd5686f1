package app

import (
	"context"
	"log/slog"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// ApplyEdits records a version of an edit on each target asset of project
// (store.ApplyEdits) and the edit:apply job that renders each, in a new
// edit batch of user's. Open views mark the photos edited at once; the
// render follows as jobs. It returns the versions and the jobs, both in
// the targets' order.
func (a *App) ApplyEdits(ctx context.Context, log *slog.Logger, user, project uuid.UUID, targets []store.EditTarget) ([]store.EditVersion, []store.Job, error) {
	var versions []store.EditVersion
	var recorded []store.Job
	err := a.store.WithTx(ctx, func(tx *store.Store) error {
		var err error
		versions, recorded, err = RecordEdits(ctx, tx, user, project, targets)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	for _, v := range versions {
		a.publish(ctx, log, events.AssetUpdated, project, uuid.Nil, map[string]any{"assetId": v.AssetID, "edited": true})
	}
	return versions, recorded, nil
}

// RecordEdits is ApplyEdits' work in tx.
func RecordEdits(ctx context.Context, tx *store.Store, user, project uuid.UUID, targets []store.EditTarget) ([]store.EditVersion, []store.Job, error) {
	versions, err := tx.ApplyEdits(ctx, user, project, targets)
	if err != nil {
		return nil, nil, err
	}
	renders := make([]tasks.JobArgs, len(versions))
	for i, v := range versions {
		renders[i] = tasks.EditPayload{Job: tasks.NewJob(project), AssetID: v.AssetID, EditID: v.ID}
	}
	recorded, err := jobs.InsertMany(ctx, tx, renders, jobs.NewBatch(user, store.BatchEdit))
	return versions, recorded, err
}

// SaveEditRender records an edit version's render as its asset's edit
// files (store.SaveEditRender) and, in the same transaction, has every
// gallery that shows the asset watermarked draw it again from its new
// look (store.RedrawAsset), so a worker that dies between the two leaves
// neither half done. It reports whether it saved, and returns the stale
// watermarked previews to delete.
func SaveEditRender(ctx context.Context, st *store.Store, version uuid.UUID, files ...store.AssetFile) (saved bool, stale []string, err error) {
	err = st.WithTx(ctx, func(tx *store.Store) error {
		saved, stale = false, nil
		var err error
		if saved, err = tx.SaveEditRender(ctx, version, files...); err != nil || !saved || len(files) == 0 {
			return err
		}
		changes, err := tx.RedrawAsset(ctx, files[0].AssetID)
		if err != nil {
			return err
		}
		for _, ch := range changes {
			stale = append(stale, ch.Stale...)
			if err := renderGallery(ctx, tx, ch); err != nil {
				return err
			}
		}
		return nil
	})
	return saved, stale, err
}
