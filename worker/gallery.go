package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/imaging"
	"lightbox/render"
	"lightbox/store"
	"lightbox/tasks"
)

func init() { handle(tasks.TypeGallery, (*Worker).galleryRender) }

// galleryRender makes a photo's watermarked preview for a gallery from its
// plain preview (its newest edit's, when it has one), with the mark the
// gallery names (its text, or its title; where; how light), stores it
// under the gallery's own key and records it. A photo taken out of the
// gallery, or a gallery whose watermark was turned off, needs nothing; a
// preview ingest has not made yet is waited for through the retries.
//
// Each run writes under a key of its own, a discard until the photo's row
// names it, so a file no row keeps (the run died before recording it, the
// photo left the gallery meanwhile and the delete failed) is deleted by
// the sweeper, and never one a later run recorded.
func (w *Worker) galleryRender(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.GalleryPayload](t)
	if err != nil {
		return err
	}
	item, err := w.st.GalleryRenderItem(ctx, p.GalleryID, p.AssetID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !item.Watermark || item.Rendered != nil {
		return nil
	}
	switch item.AssetStatus {
	case store.AssetCull, store.AssetSearch, store.AssetAI:
	case store.AssetFailed, store.AssetDuplicate:
		return badInput("no_preview", "The photo has no preview to watermark: it is %s.", item.AssetStatus)
	default:
		return fmt.Errorf("the photo's preview is not made yet (it is %s)", item.AssetStatus)
	}
	// The photo as its newest edit left it, if it has one.
	f, _, err := w.blobs.Open(ctx, blob.DerivedKey(p.AssetID, blob.KindEditPreview))
	if errors.Is(err, blob.ErrNotFound) {
		f, _, err = w.blobs.Open(ctx, blob.DerivedKey(p.AssetID, blob.KindPreview))
	}
	if errors.Is(err, blob.ErrNotFound) {
		return badInput("no_preview", "The photo's preview is missing.")
	}
	if err != nil {
		return err
	}
	src, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return err
	}
	marked, err := render.Watermark(src, render.Mark(item.Mark), imaging.DefaultPreviewQuality)
	if err != nil {
		return badInput("corrupt_image", "The photo's preview cannot be read: %v.", err)
	}
	key := galleryPreviewKey(p, uuid.New())
	if err := w.discardUntilNamed(ctx, tasks.TypeGallery, key); err != nil {
		return err
	}
	if _, err := w.blobs.Put(ctx, key, bytes.NewReader(marked), int64(len(marked))); err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	err = w.st.SetWatermarkKey(ctx, p.GalleryID, p.AssetID, key, item.Mark)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Taken out of the gallery meanwhile, or another run's is recorded:
		// nobody will show this one.
		return w.blobs.Delete(ctx, key)
	case errors.Is(err, store.ErrMarkChanged):
		// The owner changed the mark while this drew the old one; the
		// retry draws the new one.
		if err := w.blobs.Delete(ctx, key); err != nil {
			return err
		}
		return fmt.Errorf("gallery:render: %w", err)
	case errors.Is(err, store.ErrDiscardDue):
		w.dropLate(ctx, key)
	}
	return err
}

// galleryPreviewKey is where run of gallery:render stores a photo's
// watermarked preview for a gallery: a key of its own, so the sweeper's
// delete of a file no row kept can never hit one a row names.
func galleryPreviewKey(p tasks.GalleryPayload, run uuid.UUID) string {
	return "galleries/" + p.GalleryID.String() + "/" + p.AssetID.String() + "-" + run.String() + ".jpg"
}
