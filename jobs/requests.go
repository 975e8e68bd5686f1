package jobs

import (
	"context"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/tasks"
)

// Import records, in tx, a URL import of owner's into project: an asset
// per URL waiting for its bytes, and its asset:download job, all in a new
// import batch.
func Import(ctx context.Context, tx *store.Store, owner, project uuid.UUID, items []store.NewImport) ([]store.Job, error) {
	if err := tx.AddImports(ctx, project, items); err != nil {
		return nil, err
	}
	downloads := make([]tasks.JobArgs, len(items))
	for i, it := range items {
		downloads[i] = tasks.DownloadPayload{Job: tasks.NewJob(project), AssetID: it.AssetID, URL: it.URL}
	}
	return InsertMany(ctx, tx, downloads, NewBatch(owner, store.BatchImport))
}

// Export records export e in tx with the project:export job that builds
// it, in a batch of its own, and names both in e.
func Export(ctx context.Context, tx *store.Store, e *store.Export) error {
	job, err := Insert(ctx, tx, tasks.ExportPayload{Job: tasks.NewJob(e.ProjectID), ExportID: e.ID}, NewBatch(e.UserID, store.BatchExport))
	if err != nil {
		return err
	}
	e.BatchID, e.JobID = job.BatchID, &job.ID
	return tx.CreateExport(ctx, e)
}

// ApplyEdits records in tx a version of an edit on each target asset of
// project (store.ApplyEdits) and the edit:apply job that renders each, in
// a new edit batch of user's. It returns the versions and the jobs, both
// in the targets' order.
func ApplyEdits(ctx context.Context, tx *store.Store, user, project uuid.UUID, targets []store.EditTarget) ([]store.EditVersion, []store.Job, error) {
	versions, err := tx.ApplyEdits(ctx, user, project, targets)
	if err != nil {
		return nil, nil, err
	}
	renders := make([]tasks.JobArgs, len(versions))
	for i, v := range versions {
		renders[i] = tasks.EditPayload{Job: tasks.NewJob(project), AssetID: v.AssetID, EditID: v.ID}
	}
	jobs, err := InsertMany(ctx, tx, renders, NewBatch(user, store.BatchEdit))
	return versions, jobs, err
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

// ChangeGallery runs change, a change to a gallery, in one transaction of
// st with the gallery:render jobs of the photos the changed gallery needs
// watermarked (store.GalleryChange.ToRender), in a new batch of the
// gallery's owner named in the change.
func ChangeGallery(ctx context.Context, st *store.Store,
	change func(tx *store.Store) (*store.GalleryChange, error)) (*store.GalleryChange, error) {
	var ch *store.GalleryChange
	err := st.WithTx(ctx, func(tx *store.Store) error {
		var err error
		if ch, err = change(tx); err != nil {
			return err
		}
		return renderGallery(ctx, tx, ch)
	})
	return ch, err
}

func renderGallery(ctx context.Context, tx *store.Store, ch *store.GalleryChange) error {
	g := ch.Gallery
	renders := make([]tasks.JobArgs, len(ch.ToRender))
	for i, asset := range ch.ToRender {
		renders[i] = tasks.GalleryPayload{Job: tasks.NewJob(g.ProjectID), GalleryID: g.ID, AssetID: asset}
	}
	jobs, err := InsertMany(ctx, tx, renders, NewBatch(g.OwnerUserID, store.BatchGallery))
	if err == nil && len(jobs) > 0 {
		ch.BatchID = jobs[0].BatchID
	}
	return err
}
