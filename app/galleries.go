package app

import (
	"context"

	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

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
	recorded, err := jobs.InsertMany(ctx, tx, renders, jobs.NewBatch(g.OwnerUserID, store.BatchGallery))
	if err == nil && len(recorded) > 0 {
		ch.BatchID = recorded[0].BatchID
	}
	return err
}
