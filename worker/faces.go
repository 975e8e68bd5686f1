package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"image"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/app"
	"lightbox/blob"
	"lightbox/events"
	"lightbox/faces"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/tasks/queuestate"
)

// facesRetry is how long a task waits for a face provider that does not
// answer and did not say when to come back.
const facesRetry = 5 * time.Second

// facesStepAside is how long a face scan that found other work waiting
// waits before it is picked again.
const facesStepAside = 5 * time.Second

// errNoFaceProvider is a worker started without FACES_URL: another worker
// may have one, so the task waits rather than fails.
var errNoFaceProvider = errors.New("this worker has no face provider (FACES_URL)")

// imageDetector is a provider that takes decoded pixels, which spares it
// a second decode of the preview (faces.HTTP does).
type imageDetector interface {
	DetectImage(ctx context.Context, img image.Image) (faces.Result, error)
}

func init() {
	handle(tasks.TypeFaces, (*Worker).findFaces)
	handle(tasks.TypeFacesScan, (*Worker).scanFaces)
}

// findFaces finds the faces in an asset's stored preview, upright as
// ingest made it (never from the original again), measures each face's
// sharpness here, and records them with the asset's summary, when its
// project still detects faces. A provider that does not answer is waited
// out without spending a retry, as are the calls over the budget all
// workers share.
func (w *Worker) findFaces(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.FacesPayload](t)
	if err != nil {
		return err
	}
	on, err := w.st.DetectsFaces(ctx, p.ProjectID)
	if errors.Is(err, store.ErrNotFound) {
		return badInput("not_found", "The project no longer exists.")
	}
	if err != nil || !on {
		// Switched off since the job was recorded: nothing to look for.
		return err
	}
	// Below every other queue: picked while other work waits, a scan
	// steps aside rather than hold a slot, and the sidecar's core, for
	// five ingests' worth of CPU. A check that fails lets it run: it only
	// orders work.
	if ahead, _ := queuestate.Waiting(ctx, w.rdb, w.ahead); ahead {
		return tasks.RateLimited("the work queued ahead of it", facesStepAside)
	}
	if w.faces == nil {
		return tasks.Unavailable("face provider", time.Minute, errNoFaceProvider)
	}
	img, jpeg, err := w.derivedImage(ctx, p.AssetID, blob.KindPreview)
	if err != nil {
		return err
	}
	if err := w.spend(ctx, "faces", "face provider", w.facesLimit); err != nil {
		return err
	}
	var res faces.Result
	if d, ok := w.faces.(imageDetector); ok {
		res, err = d.DetectImage(ctx, img)
	} else {
		res, err = w.faces.Detect(ctx, jpeg)
	}
	var down *faces.UnavailableError
	var refused *faces.StatusError
	switch {
	case errors.As(err, &down):
		return tasks.Unavailable("face provider", cmp.Or(down.RetryAfter, facesRetry), err)
	case errors.As(err, &refused) && refused.BadImage():
		return badInput("faces_bad_image", "The face provider cannot read the photo's preview: %s", refused.Message)
	case err != nil:
		return err
	}
	found := make([]store.Face, len(res.Faces))
	for i, f := range res.Faces {
		found[i] = faceRow(img, f)
	}
	scan, err := w.st.SaveFaces(ctx, store.FaceScan{AssetID: p.AssetID, Model: res.Model,
		Width: img.Bounds().Dx(), Height: img.Bounds().Dy()}, found)
	if errors.Is(err, store.ErrNotFound) {
		return badInput("not_found", "The asset no longer exists.")
	}
	if err != nil || scan == nil {
		return err
	}
	// Asset.faces, for the grid's marks, and the quality judged again
	// with them: blown faces warn of over-exposure, faces that keep their
	// highlights take back the frame's. Without the quality (a read that
	// failed) the page keeps the warnings it has.
	update := map[string]any{"assetId": p.AssetID, "faces": map[string]any{
		"count": scan.FaceCount, "eyesClosed": scan.EyesClosed, "outOfFocus": scan.OutOfFocus, "minFaceSharpness": scan.MinSharpness}}
	if a, err := w.st.AssetByID(ctx, p.AssetID); err == nil {
		update["quality"] = app.AssetQuality(p.AssetID, a.Quality, scan)
	}
	w.tracker.Tell(ctx, events.AssetUpdated, p.ProjectID, uuid.Nil, update)
	// Group winners weigh open eyes and sharp faces.
	return w.scheduleCluster(ctx, p.ProjectID)
}

// faceRow is a provider's face as stored, with its sharpness measured in
// img, the pixels the provider read.
func faceRow(img image.Image, f faces.Face) store.Face {
	sharp, clipped := faces.Sharpness(img, f.Box), faces.Clipped(img, f.Box)
	row := store.Face{X: f.Box.X, Y: f.Box.Y, W: f.Box.W, H: f.Box.H, Score: f.Score, Sharpness: sharp,
		EyesClosed: f.EyesClosed(), OutOfFocus: sharp < faces.SoftBelow, Clipped: &clipped}
	if e := f.EyeOpenness; e != nil {
		row.EyeLeft, row.EyeRight = &e.Left, &e.Right
	}
	if a := f.HeadAngles; a != nil {
		row.Yaw, row.Pitch, row.Roll = &a.Yaw, &a.Pitch, &a.Roll
	}
	if f.Landmarks != nil {
		row.Landmarks, _ = json.Marshal(f.Landmarks)
	}
	return row
}

// recordFaces records the asset:faces job of an asset that just became
// search-ready, when its project detects faces and the asset was not
// scanned yet. Recorded after the embedding rather than with it at ingest,
// and on the faces queue, below low: a photo's embedding and the cluster
// run that makes it "ai" never wait behind the face scans of the photos
// before it. Its id derives from the asset, so the job the scan of a
// project switching faces on records for the same photo is this one; an
// embedding that runs twice records it once. Faces switched on meanwhile
// need no lock here: the asset is saved search-ready before this reads the
// project, so their scan finds it.
func (w *Worker) recordFaces(ctx context.Context, project, asset uuid.UUID) error {
	return w.st.WithTx(ctx, func(tx *store.Store) error {
		on, err := tx.DetectsFaces(ctx, project)
		if err != nil || !on {
			return err
		}
		// A job recorded again once it ended would run again.
		scanned, err := tx.FaceScans(ctx, []uuid.UUID{asset})
		if err != nil || len(scanned) > 0 {
			return err
		}
		_, err = jobs.InsertMany(ctx, tx, []tasks.JobArgs{tasks.NewFaces(project, asset)})
		return err
	})
}

// facesScanChunk is how many asset:faces jobs one transaction of a
// project:faces task records and hands over: a project of 100,000 photos
// takes 100 short transactions, none of which holds the project for long.
const facesScanChunk = 1000

// scanFaces records an asset:faces job for each photo of a project that
// was ingested before it switched faces on, a chunk at a time, each chunk
// handed to the queue as its transaction commits. A photo whose faces were
// looked for since is left out, and a job recorded twice is one job, so a
// task that runs again records nothing new; one that finds faces switched
// off stops.
func (w *Worker) scanFaces(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.FacesScanPayload](t)
	if err != nil {
		return err
	}
	for after := uuid.Nil; ; {
		var ids []uuid.UUID
		err := w.st.WithTx(ctx, func(tx *store.Store) error {
			var err error
			if ids, err = tx.Unscanned(ctx, p.ProjectID, after, facesScanChunk); err != nil {
				return err
			}
			next := make([]tasks.JobArgs, len(ids))
			for i, id := range ids {
				next[i] = tasks.NewFaces(p.ProjectID, id)
			}
			_, err = jobs.InsertMany(ctx, tx, next)
			return err
		})
		if errors.Is(err, store.ErrNotFound) {
			return badInput("not_found", "The project no longer exists.")
		}
		if err != nil || len(ids) < facesScanChunk {
			return err
		}
		after = ids[len(ids)-1]
	}
}
