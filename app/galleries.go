package app

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"strings"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// madeSlugLen is the length of a slug made for a gallery whose owner chose
// none: 10 characters of [a-z2-7], 50 random bits.
const madeSlugLen = 10

// CreateGallery records g with assets and the renders it needs
// (ChangeGallery), and tells the project's open views. A gallery without a slug gets one made: 50 random bits
// make a clash all but impossible, and a clash makes another, so only a
// slug the owner chose is store.ErrSlugTaken in practice.
func (a *App) CreateGallery(ctx context.Context, log *slog.Logger, g *store.Gallery, assets []uuid.UUID) (*store.GalleryChange, error) {
	made := g.Slug == ""
	var ch *store.GalleryChange
	var err error
	for try := 0; ; try++ {
		if made {
			g.Slug = strings.ToLower(rand.Text()[:madeSlugLen])
		}
		ch, err = ChangeGallery(ctx, a.store, func(tx *store.Store) (*store.GalleryChange, error) { return tx.CreateGallery(ctx, g, assets) })
		if !errors.Is(err, store.ErrSlugTaken) || !made || try == 3 {
			break
		}
	}
	return a.followChange(ctx, log, ch, err)
}

// UpdateGallery applies patch to owner's gallery id (store.UpdateGallery)
// with the renders the change needs: turning the watermark on, or a new
// look of it, draws the previews again. The previews it made stale are
// deleted, and open views read the gallery again.
func (a *App) UpdateGallery(ctx context.Context, log *slog.Logger, owner, id uuid.UUID, patch store.GalleryInput) (*store.GalleryChange, error) {
	ch, err := ChangeGallery(ctx, a.store, func(tx *store.Store) (*store.GalleryChange, error) {
		return tx.UpdateGallery(ctx, owner, id, patch)
	})
	return a.followChange(ctx, log, ch, err)
}

// AddGalleryAssets adds assets, of the gallery's project, to gallery, with
// the renders a watermarked gallery needs of them, and tells open views.
func (a *App) AddGalleryAssets(ctx context.Context, log *slog.Logger, gallery uuid.UUID, assets []uuid.UUID) (*store.GalleryChange, error) {
	ch, err := ChangeGallery(ctx, a.store, func(tx *store.Store) (*store.GalleryChange, error) {
		return tx.AddGalleryAssets(ctx, gallery, assets)
	})
	return a.followChange(ctx, log, ch, err)
}

// RemoveGalleryAssets takes assets out of g, as its owner loaded it, and
// deletes their watermarked previews; a render still running writes its
// preview after this, finds the photo gone and deletes what it wrote. It
// tells open views, and returns the gallery as it is now.
func (a *App) RemoveGalleryAssets(ctx context.Context, log *slog.Logger, g *store.Gallery, assets []uuid.UUID) (*store.Gallery, error) {
	stale, err := a.store.RemoveGalleryAssets(ctx, g.ID, assets)
	if err != nil {
		return nil, err
	}
	a.galleryChanged(ctx, log, g.ProjectID, g.ID, stale, nil)
	return a.store.Gallery(ctx, g.OwnerUserID, g.ID)
}

// DeleteGallery ends g, as its owner loaded it: its link finds nothing
// from now on, and its watermarked previews are deleted (a render still
// running finds the gallery gone and deletes what it wrote). Open views
// drop it.
func (a *App) DeleteGallery(ctx context.Context, log *slog.Logger, g *store.Gallery) error {
	stale, err := a.store.DeleteGallery(ctx, g.OwnerUserID, g.ID)
	if err != nil {
		return err
	}
	a.galleryChanged(ctx, log, g.ProjectID, g.ID, stale, map[string]any{"deleted": true})
	return nil
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

// followChange follows change ch once committed (galleryChanged), unless
// err says it failed.
func (a *App) followChange(ctx context.Context, log *slog.Logger, ch *store.GalleryChange, err error) (*store.GalleryChange, error) {
	if err != nil {
		return nil, err
	}
	a.galleryChanged(ctx, log, ch.Gallery.ProjectID, ch.Gallery.ID, ch.Stale, nil)
	return ch, nil
}

// galleryChanged follows a committed change to gallery: it deletes the
// watermarked previews the change made stale, and publishes
// gallery.updated on the project's streams, {galleryId} and what more says
// of the change, so that the owner's pages read the gallery again (or
// drop it, when deleted is true).
func (a *App) galleryChanged(ctx context.Context, log *slog.Logger, project, gallery uuid.UUID, stale []string, more map[string]any) {
	// The change is committed: what follows goes on even if the caller has gone.
	ctx, cancel := jobs.AfterCommit(ctx)
	defer cancel()
	for _, k := range stale {
		// The store discarded them: the sweeper deletes one missed here.
		if err := a.Blobs.Delete(ctx, k); err != nil {
			log.Warn("delete watermarked preview", "key", k, "err", err)
		}
	}
	data := map[string]any{"galleryId": gallery}
	for k, v := range more {
		data[k] = v
	}
	a.publish(ctx, log, events.GalleryUpdated, project, uuid.Nil, data)
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
