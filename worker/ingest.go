package worker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/assist"
	"lightbox/blob"
	"lightbox/imaging"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// hashAlgorithm names imaging.PHash in stored rows, so a future hash can
// live beside it.
const hashAlgorithm = "phash-dct-64"

// inputError is bad input: it has a stable code and never gets better.
type inputError struct {
	code, msg string
}

func (e *inputError) Error() string     { return e.msg }
func (e *inputError) ErrorCode() string { return e.code }

func badInput(code, format string, args ...any) error {
	return tasks.Permanent(&inputError{code: code, msg: fmt.Sprintf(format, args...)})
}

func init() { handle(tasks.TypeIngest, (*Worker).ingest) }

// ingest turns an uploaded original into its preview, thumbnail (unless
// the thumbnail task made it first), metadata, perceptual hash and quality
// signals, all saved in one transaction with the embedding job that
// follows (which records the faces job in a project that detects them).
func (w *Worker) ingest(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.IngestPayload](t)
	if err != nil {
		return err
	}
	a, err := w.asset(ctx, p.AssetID)
	if err != nil {
		return err
	}
	if a.Status == store.AssetPendingUpload || a.Status == store.AssetDuplicate || a.ChecksumSHA256 == nil {
		return badInput("not_processable", "The asset is %s; only finalized originals are processed.", a.Status)
	}

	data, err := w.readOriginal(ctx, a)
	if err != nil {
		return err
	}
	res, err := w.engine.Process(ctx, data, imaging.Options{})
	if code := imaging.ErrorCode(err); code != "" {
		var ie *imaging.Error
		errors.As(err, &ie)
		if m := ie.Metadata; m != nil {
			if err := w.st.SaveCamera(ctx, a.ID, m.CameraMake, m.CameraModel, m.LensModel); err != nil {
				return err
			}
		}
		return badInput(code, "%s", ie.Message)
	}
	if err != nil {
		return err
	}

	preview, err := w.putDerived(ctx, a.ID, blob.KindPreview, res.Preview)
	if err != nil {
		return err
	}
	out := ingestOutput(a, res, preview)
	err = w.st.WithTx(ctx, func(tx *store.Store) error {
		// A thumbnail made ahead of this one stays, but a raw's is its
		// camera's rendering, where the preview may be LibRaw's: this one
		// replaces it. Either is put while the asset's row is held (see
		// store.LockThumbnail).
		_, made, err := tx.LockThumbnail(ctx, a.ID)
		if err != nil {
			return err
		}
		if !made || res.Format.IsRaw() {
			thumb, err := w.putDerived(ctx, a.ID, blob.KindThumbnail, res.Thumbnail)
			if err != nil {
				return err
			}
			out.Files = append(out.Files, thumb)
		}
		if err := tx.SaveIngest(ctx, out); err != nil {
			return err
		}
		// Recorded with the results, so it exists exactly when they do.
		// The faces job follows the embedding (recordFaces).
		_, err = jobs.Insert(ctx, tx, embedJob(a, w.embedder.Model()))
		return err
	})
	var dup *store.DuplicateError
	if errors.As(err, &dup) {
		// A failed asset run again (from Asynqmon) after its bytes were
		// uploaded again: the other asset is the project's original.
		return badInput("duplicate", "The same photo was uploaded again as asset %s, which is kept.", dup.Of)
	}
	return err
}

// asset loads the asset a task works on; one deleted since is bad input.
func (w *Worker) asset(ctx context.Context, id uuid.UUID) (*store.Asset, error) {
	a, err := w.st.AssetByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, badInput("not_found", "The asset no longer exists.")
	}
	return a, err
}

// readOriginal reads the original once and checks it is still the bytes
// the client finalized.
func (w *Worker) readOriginal(ctx context.Context, a *store.Asset) ([]byte, error) {
	data, err := w.readStored(ctx, a)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != *a.ChecksumSHA256 {
		return nil, badInput("original_changed", "The stored original no longer matches its checksum.")
	}
	return data, nil
}

// readStored reads the original without checking it against its checksum.
func (w *Worker) readStored(ctx context.Context, a *store.Asset) ([]byte, error) {
	f, info, err := w.blobs.Open(ctx, a.BlobKey)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, badInput("original_missing", "The original file is missing from storage.")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size > w.cfg.MaxUploadBytes {
		return nil, badInput(imaging.CodeTooLarge, "The original is %d bytes; the limit is %d.", info.Size, w.cfg.MaxUploadBytes)
	}
	// Read to the size the store gave: io.Copy into a buffer of exactly
	// that size grows it to twice as much to find the end, copying the
	// whole original once more.
	data := make([]byte, info.Size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, err
	}
	return data, nil
}

// putDerived stores a derived file under its fixed key; writing it again
// replaces it atomically.
func (w *Worker) putDerived(ctx context.Context, asset uuid.UUID, kind string, o imaging.Output) (store.AssetFile, error) {
	key := blob.DerivedKey(asset, kind)
	info, err := w.blobs.Put(ctx, key, bytes.NewReader(o.Data), int64(len(o.Data)))
	if err != nil {
		return store.AssetFile{}, err
	}
	return store.AssetFile{AssetID: asset, Kind: kind, BlobKey: key, ContentType: o.ContentType, ByteSize: info.Size,
		ChecksumSHA256: info.SHA256, WidthPx: &o.Width, HeightPx: &o.Height}, nil
}

// judgedPhoto is q's signals as package assist reads them.
func judgedPhoto(q imaging.Quality) assist.Photo {
	return assist.Photo{Judged: true, Focus: q.Focus, Motion: q.MotionBlur, EV: q.Exposure, Detail: q.Detail}
}

// judged is q with the assistant's warnings and keeper score at the
// default strictness; faces, looked for later, are judged when read.
func judged(q imaging.Quality) imaging.Quality {
	p := judgedPhoto(q)
	q.Warnings, q.Score = assist.Warnings(p, assist.Defaults()), assist.Score(p)
	if q.Warnings == nil {
		q.Warnings = []string{}
	}
	return q
}

func ingestOutput(a *store.Asset, res *imaging.Result, files ...store.AssetFile) store.IngestOutput {
	m := res.Metadata
	exif, _ := json.Marshal(m)
	quality, _ := json.Marshal(judged(res.Quality))
	out := store.IngestOutput{
		AssetID: a.ID, Width: res.Width, Height: res.Height, CapturedOffset: m.CapturedAtOffset,
		CameraMake: m.CameraMake, CameraModel: m.CameraModel, LensModel: m.LensModel, FocalLengthMm: m.FocalLengthMm,
		ShutterSpeed: m.ShutterSpeed, Aperture: m.Aperture, ISO: m.ISO, GPSLat: m.GPSLatitude, GPSLon: m.GPSLongitude,
		EXIF: exif, Quality: quality, MetadataWarning: res.MetadataWarning, PHash: res.PHash, HashAlgorithm: hashAlgorithm,
		Files: files,
	}
	// Without a recorded offset the camera's wall clock is read as UTC.
	if at, ok := m.CaptureTime(time.UTC); ok {
		out.CapturedAt = &at
	}
	if d := m.XMP; d != nil {
		out.Keywords = xmpKeywords(d.Keywords)
		if iptc, _ := json.Marshal(d.IPTC); len(iptc) <= store.MaxIPTC {
			out.IPTC = iptc
		}
		out.Decision = &store.XMPDecision{Rating: d.Rating, Picked: d.Picked, Rejected: d.Rejected, ColorLabel: d.ColorLabel}
	}
	return out
}

// xmpKeywords keeps the first keywords that fit the asset's bounds, as
// PATCH /v1/assets/{id} holds an owner's own to.
func xmpKeywords(ks []string) []string {
	var out []string
	for _, k := range ks {
		if utf8.RuneCountInString(k) <= store.MaxKeywordLen && len(out) < store.MaxKeywords {
			out = append(out, k)
		}
	}
	return out
}

// embedJob is the job that follows ingest. Its id derives from the asset
// and model, so an ingest that runs twice records it once.
func embedJob(a *store.Asset, model string) tasks.EmbedPayload {
	id := uuid.NewSHA1(a.ID, []byte("embed:"+model))
	return tasks.EmbedPayload{Job: tasks.Job{JobID: id, ProjectID: a.ProjectID}, AssetID: a.ID, Model: model}
}
