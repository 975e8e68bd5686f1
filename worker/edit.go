package worker

import (
	"context"
	"errors"

	"github.com/hibiken/asynq"

	"lightbox/imaging"
	"lightbox/render"
	"lightbox/store"
	"lightbox/tasks"
)

// applyEdit renders an edit version onto its asset's original and stores
// the result as the asset's edit_preview and edit_thumbnail. Running it
// again writes the same files over themselves.
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
	out, err := render.ApplyEdit(ctx, w.engine, data, e)
	var ie *imaging.Error
	if errors.As(err, &ie) {
		return badInput(ie.Code, "%s", ie.Message)
	}
	if err != nil {
		return err
	}
	preview, err := w.putDerived(ctx, a.ID, "edit_preview", out.Preview)
	if err != nil {
		return err
	}
	thumb, err := w.putDerived(ctx, a.ID, "edit_thumbnail", out.Thumbnail)
	if err != nil {
		return err
	}
	return w.st.SaveEditRender(ctx, v.ID, preview, thumb)
}
