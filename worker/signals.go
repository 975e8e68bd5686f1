package worker

import (
	"context"
	"encoding/json"
	"errors"
	"image"
	_ "image/jpeg"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/assist"
	"lightbox/blob"
	"lightbox/events"
	"lightbox/imaging"
	"lightbox/tasks"
)

func init() {
	handle(tasks.TypeSignals, (*Worker).judgeProject)
}

// signalsChunk is how many photos one query of judgeProject lists.
const signalsChunk = 200

// judgeProject gives each photo of a project ingested before the judged
// signals existed its focus, motion, exposure, detail, warnings and score,
// read from its stored preview. Each photo's signals are merged into its
// quality as they are read, so a run cut short starts over on the photos
// still unjudged, and one that runs twice finds none. A photo without a
// preview is left unjudged: it has not been ingested, and its ingest
// judges it.
func (w *Worker) judgeProject(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.SignalsPayload](t)
	if err != nil {
		return err
	}
	judged, skipped := 0, 0
	for after := uuid.Nil; ; {
		ids, err := w.st.Unjudged(ctx, p.ProjectID, after, signalsChunk)
		if err != nil {
			return err
		}
		for _, id := range ids {
			ok, err := w.judgeFromPreview(ctx, p.ProjectID, id)
			if err != nil {
				return err
			}
			if ok {
				judged++
			} else {
				skipped++
			}
		}
		if len(ids) < signalsChunk {
			break
		}
		after = ids[len(ids)-1]
	}
	w.log.Info("project judged", "project", p.ProjectID, "photos", judged, "without preview", skipped)
	return nil
}

// judgeFromPreview saves asset's signals read from its preview, and tells
// the project's viewers its new warnings; false when it has no preview to
// read, or one that does not decode.
func (w *Worker) judgeFromPreview(ctx context.Context, project, asset uuid.UUID) (bool, error) {
	f, _, err := w.blobs.Open(ctx, blob.DerivedKey(asset, blob.KindPreview))
	if errors.Is(err, blob.ErrNotFound) {
		w.log.Warn("photo left unjudged: no preview", "asset", asset)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		w.log.Warn("photo left unjudged: its preview does not decode", "asset", asset, "err", err)
		return false, nil
	}
	q := judged(imaging.SignalsOf(img))
	signals, err := json.Marshal(map[string]any{"focus": q.Focus, "motionBlur": q.MotionBlur, "exposure": q.Exposure,
		"detail": q.Detail, "warnings": q.Warnings, "score": q.Score})
	if err != nil {
		return false, err
	}
	if err := w.st.SaveSignals(ctx, asset, signals); err != nil {
		return false, err
	}
	// The faces' warnings are not judged here: the app keeps those it has.
	w.tracker.Tell(ctx, events.AssetUpdated, project, uuid.Nil, map[string]any{"assetId": asset,
		"quality": map[string]any{"warnings": q.Warnings, "score": q.Score, "reasons": assist.Judge(judgedPhoto(q), assist.Defaults())}})
	return true, nil
}
