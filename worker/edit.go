package worker

import (
	"context"
	"errors"
	"image"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/app"
	"lightbox/blob"
	"lightbox/imaging"
	"lightbox/render"
	"lightbox/store"
	"lightbox/tasks"
)

func init() { handle(tasks.TypeEdit, (*Worker).applyEdit) }

// applyEdit renders an edit version onto its asset's original and stores
// the result as the asset's edit_preview and edit_thumbnail. Running it
// again writes the same files over themselves. A version that is no longer
// its asset's newest (a retry that ran after a newer version was made) is
// not rendered: its files would replace the newer one's.
func (w *Worker) applyEdit(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.EditPayload](t)
	if err != nil {
		return err
	}
	v, err := w.st.EditVersionByID(ctx, p.EditID)
	if errors.Is(err, store.ErrNotFound) {
		return badInput("not_found", "The edit version no longer exists.")
	}
	if err != nil {
		return err
	}
	if superseded, err := w.supersededEdit(ctx, v.ID); superseded || err != nil {
		return err
	}
	e, problems := render.ParseEdit(v.Params)
	if len(problems) > 0 {
		// The API checked them; a stored version that fails is not worth retrying.
		return badInput("invalid_edit", "The edit's params are not valid: %v", problems)
	}
	a, err := w.asset(ctx, v.AssetID)
	if err != nil {
		return err
	}
	if a.Status == store.AssetPendingUpload || a.ChecksumSHA256 == nil {
		return badInput("not_processable", "The asset is %s; only finalized originals are edited.", a.Status)
	}
	data, err := w.readOriginal(ctx, a)
	if err != nil {
		return err
	}
	out, err := render.ApplyEdit(ctx, w.engine, data, shownSize(a.WidthPx, a.HeightPx), e)
	var ie *imaging.Error
	if errors.As(err, &ie) {
		return badInput(ie.Code, "%s", ie.Message)
	}
	if err != nil {
		return err
	}
	// Rendering takes a while; a newer version may have come meanwhile.
	if superseded, err := w.supersededEdit(ctx, v.ID); superseded || err != nil {
		return err
	}
	preview, err := w.putDerived(ctx, a.ID, blob.KindEditPreview, out.Preview)
	if err != nil {
		return err
	}
	thumb, err := w.putDerived(ctx, a.ID, blob.KindEditThumbnail, out.Thumbnail)
	if err != nil {
		return err
	}
	saved, stale, err := app.SaveEditRender(ctx, w.st, v.ID, preview, thumb)
	for _, key := range stale {
		if err := w.blobs.Delete(ctx, key); err != nil {
			w.log.Warn("delete a gallery's preview drawn before the edit; the sweeper will", "key", key, "err", err)
		}
	}
	if err != nil || saved {
		return err
	}
	w.log.Info("edit superseded while its files were written", "edit", v.ID)
	return nil
}

// supersededEdit reports, and logs, a version that is no longer its
// asset's newest.
func (w *Worker) supersededEdit(ctx context.Context, version uuid.UUID) (bool, error) {
	newest, err := w.st.NewestEdit(ctx, version)
	if err == nil && !newest {
		w.log.Info("edit superseded by a newer version; not rendered", "edit", version)
	}
	return err == nil && !newest, err
}

// shownSize is a photo's size as ingest measured it (after its
// orientation), zero when not measured yet.
func shownSize(w, h *int) image.Point {
	if w == nil || h == nil {
		return image.Point{}
	}
	return image.Pt(*w, *h)
}
