package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/imaging"
	"lightbox/render"
	"lightbox/store"
	"lightbox/tasks"
)

// galleryRender makes a photo's watermarked preview for a gallery from its
// plain preview, stores it under the gallery's own key and records it. A
// photo taken out of the gallery, or a gallery whose watermark was turned
// off, needs nothing; a preview ingest has not made yet is waited for
// through the retries.
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
	f, _, err := w.blobs.Open(ctx, blob.DerivedKey(p.AssetID, "preview", "jpg"))
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
	marked, err := render.Watermark(src, watermarkText(item.OwnerEmail), imaging.DefaultPreviewQuality)
	if err != nil {
		return badInput("corrupt_image", "The photo's preview cannot be read: %v.", err)
	}
	key := galleryPreviewKey(p)
	if _, err := w.blobs.Put(ctx, key, bytes.NewReader(marked), int64(len(marked))); err != nil {
		return err
	}
	err = w.st.SetWatermarkKey(context.WithoutCancel(ctx), p.GalleryID, p.AssetID, key)
	if errors.Is(err, store.ErrNotFound) {
		// Taken out of the gallery meanwhile: nobody will show it.
		return w.blobs.Delete(context.WithoutCancel(ctx), key)
	}
	return err
}

// watermarkText credits the gallery's owner by the name part of their
// address.
func watermarkText(email string) string {
	name, _, _ := strings.Cut(email, "@")
	return "© " + name
}

// galleryPreviewKey is where a photo's watermarked preview for a gallery
// is stored.
func galleryPreviewKey(p tasks.GalleryPayload) string {
	return "galleries/" + p.GalleryID.String() + "/" + p.AssetID.String() + ".jpg"
}
