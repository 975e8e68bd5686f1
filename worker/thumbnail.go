package worker

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/events"
	"lightbox/imaging"
	"lightbox/store"
	"lightbox/tasks"
)

func init() { handle(tasks.TypeThumbnail, (*Worker).thumbnail) }

// thumbnail makes an uploaded original's thumbnail ahead of its ingest,
// decoding only what a thumbnail needs, so a batch's whole grid shows
// while its previews are still being made. Ingest makes the thumbnail
// when this has not, so anything that stops this one (bad input, the
// asset gone or already ingested) ends it quietly: ingest says why.
func (w *Worker) thumbnail(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.ThumbnailPayload](t)
	if err != nil {
		return err
	}
	a, err := w.st.AssetByID(ctx, p.AssetID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if a.Status != store.AssetUploaded || a.ThumbnailAt != nil {
		return nil
	}
	// Not checked against its checksum: the ingest checks the same bytes
	// and fails the asset if they changed, and the check is a twentieth
	// of a 12 MP thumbnail's time.
	data, err := w.readStored(ctx, a)
	if tasks.IsPermanent(err) {
		return nil
	}
	if err != nil {
		return err
	}
	out, err := w.engine.Thumbnail(ctx, data, imaging.Options{})
	if imaging.ErrorCode(err) != "" {
		return nil
	}
	if err != nil {
		return err
	}
	made := false
	err = w.st.WithTx(ctx, func(tx *store.Store) error {
		status, done, err := tx.LockThumbnail(ctx, a.ID)
		if err != nil || status != store.AssetUploaded || done {
			return err
		}
		f, err := w.putDerived(ctx, a.ID, blob.KindThumbnail, out)
		if err != nil {
			return err
		}
		made = true
		return tx.SaveThumbnail(ctx, f)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err == nil && made {
		// No status: this may reach a client after the ingest's own event.
		w.tracker.Tell(ctx, events.AssetUpdated, a.ProjectID, uuid.Nil, map[string]any{"assetId": a.ID, "thumbnail": true})
	}
	return err
}
