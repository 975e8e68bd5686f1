package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/events"
	"lightbox/imaging"
	"lightbox/internal/ptr"
	"lightbox/jobs"
	"lightbox/render"
	"lightbox/store"
	"lightbox/tasks"
)

// Progress is recorded and published after this many photos, or after
// this long, whichever comes first.
const (
	exportProgressEvery = 5
	exportProgressAfter = 2 * time.Second
)

// errExportCanceled stops a build whose export was canceled meanwhile.
var errExportCanceled = errors.New("export canceled")

type exportEvent struct {
	ExportID uuid.UUID     `json:"exportId"`
	Status   string        `json:"status"`
	Progress float64       `json:"progress"`
	Skipped  int           `json:"skipped"`
	Error    *jobs.Failure `json:"error"`
}

func init() { handle(tasks.TypeExport, (*Worker).export) }

// export builds an export's zip archive. The archive streams into a blob
// writer that publishes it only on Commit, after an fsync; any failure,
// cancellation included, aborts the writer, so an attempt leaves either a
// whole archive or nothing, and a retry starts clean. Photos that cannot be
// exported are listed in the export's skipped list with a reason rather
// than failing it.
//
// Each run writes under its own token and key. A run handed back at a stop
// may still be ending when the next run has started: it is then stale, and
// stops without writing, canceling or deleting anything of the next run's.
// A run's key is a discard from before it is written until FinishExport
// names it, so an archive no export keeps (the run died, was taken over or
// canceled, and its own delete failed) is deleted by the sweeper.
func (w *Worker) export(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.ExportPayload](t)
	if err != nil {
		return err
	}
	e, started, err := w.st.StartExport(ctx, p.ExportID)
	if errors.Is(err, store.ErrNotFound) {
		return badInput("not_found", "The export no longer exists.")
	}
	if err != nil {
		return err
	}
	if !started {
		return nil // done, canceled or expired: nothing to build
	}
	w.exportChanged(ctx, e)

	b := &exportBuild{w: w, e: e, token: *e.RunToken, lastAt: time.Now()}
	info, err := b.run(ctx)

	err = w.tracker.Interrupted(ctx, err)
	// Record the outcome even when the task's own context has ended.
	ctx = context.WithoutCancel(ctx)
	if err == nil {
		done, ferr := w.st.FinishExport(ctx, e.ID, b.token, info.Key, info.Size, b.skipped)
		switch {
		case ferr == nil:
			w.exportChanged(ctx, done)
			return nil
		case errors.Is(ferr, store.ErrStaleRun):
			// Taken over while the archive was being published: nobody will
			// serve it, and its key is this run's alone.
			if err := w.blobs.Delete(ctx, info.Key); err != nil {
				w.log.Warn("delete a superseded export run's archive", "export", e.ID, "key", info.Key, "err", err)
			}
			return w.exportStale(e, b.token)
		case errors.Is(ferr, store.ErrNotFound):
			// Canceled while the archive was being published: nobody wants it.
			w.exportCanceled(ctx, e)
			return w.blobs.Delete(ctx, info.Key)
		case errors.Is(ferr, store.ErrDiscardDue):
			// Published too late to keep: the attempt fails, and the next
			// writes a new archive.
			w.dropLate(ctx, info.Key)
			err = ferr
		default:
			return ferr
		}
	}
	if errors.Is(err, store.ErrStaleRun) {
		return w.exportStale(e, b.token)
	}
	if errors.Is(err, errExportCanceled) {
		w.exportCanceled(ctx, e)
		return nil
	}
	status := store.JobQueued
	if jobs.FailsForGood(ctx, err) {
		status = store.JobFailed
	}
	code, msg := jobs.ErrorCode(err)
	failed, ferr := w.st.FailExport(ctx, e.ID, b.token, status, code, msg, b.skipped)
	switch {
	case ferr == nil:
		w.exportChanged(ctx, failed)
	case errors.Is(ferr, store.ErrStaleRun):
		return w.exportStale(e, b.token)
	case errors.Is(ferr, store.ErrNotFound):
		w.exportCanceled(ctx, e)
	default:
		w.log.Error("record export failure", "export", e.ID, "err", ferr)
	}
	return err
}

// exportChanged tells listeners of an export's new state.
func (w *Worker) exportChanged(ctx context.Context, e *store.Export) {
	ev := exportEvent{ExportID: e.ID, Status: e.Status, Progress: e.Progress, Skipped: countSkips(e.Skipped)}
	ev.Error = jobs.FailureOf(e.ErrorCode, e.ErrorMessage)
	w.publishExport(ctx, e, ev)
	w.jobs.ExportChanged(ctx, w.log, e)
}

func (w *Worker) publishExport(ctx context.Context, e *store.Export, ev exportEvent) {
	batch := uuid.Nil
	if e.BatchID != nil {
		batch = *e.BatchID
	}
	w.publish(ctx, events.ExportUpdated, e.ProjectID, batch, ev)
}

// exportCanceled finishes a cancel the build noticed: the export's job
// and batch are canceled too (so the job is not recorded done), and
// listeners are told.
func (w *Worker) exportCanceled(ctx context.Context, e *store.Export) {
	if e.BatchID != nil {
		if err := w.jobs.MarkCanceling(ctx, e.ProjectID); err != nil {
			w.log.Warn("mark project for cancel", "export", e.ID, "err", err)
		} else if _, _, err := w.st.CancelBatch(ctx, *e.BatchID); err != nil {
			w.log.Warn("cancel export batch", "export", e.ID, "err", err)
		}
	}
	if e, err := w.st.ExportByID(ctx, e.ID); err == nil && e.Status == store.JobCanceled {
		w.exportChanged(ctx, e)
	}
}

// exportStale ends a run that a later run of the export took over: the
// export, its job and batch are that run's now. The error it returns
// tells trackJobs to record nothing either.
func (w *Worker) exportStale(e *store.Export, run uuid.UUID) error {
	w.log.Info("export run superseded by a later one; it stops", "export", e.ID, "run", run)
	return store.ErrStaleRun
}

func countSkips(raw []byte) int {
	var skips []json.RawMessage
	json.Unmarshal(raw, &skips)
	return len(skips)
}

// expireExport deletes an expired export's file, then records it.
func (w *Worker) expireExport(ctx context.Context, e store.Export) error {
	if e.BlobKey != nil {
		if err := w.blobs.Delete(ctx, *e.BlobKey); err != nil {
			return err
		}
	}
	expired, moved, err := w.st.ExpireExport(ctx, e.ID)
	if moved {
		w.exportChanged(ctx, expired) // its download is gone: say so
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	}
	return err
}

// exportKey is where a run of an export stores its archive: a folder of
// its own, so a run that is taken over never touches the next run's file.
// The file name is what a browser saves it as.
func exportKey(e *store.Export, run uuid.UUID) string {
	return "exports/" + e.ID.String() + "/" + run.String() + "/" + render.ArchiveName(e.Preset, e.ID)
}

// exportBuild is one attempt at building an export.
type exportBuild struct {
	w        *Worker
	e        *store.Export
	token    uuid.UUID // the attempt's token, which its writes name
	settings render.Settings
	skipped  []store.ExportSkip

	total, done, last int // items, items handled, items at the last report
	lastAt            time.Time
}

func (b *exportBuild) run(ctx context.Context) (blob.Info, error) {
	preset, ok := render.Lookup(b.e.Preset)
	if !ok {
		return blob.Info{}, tasks.Permanent(fmt.Errorf("export preset %q is unknown", b.e.Preset))
	}
	if err := json.Unmarshal(b.e.Settings, &b.settings); err != nil {
		return blob.Info{}, tasks.Permanent(fmt.Errorf("export settings: %w", err))
	}
	items, err := b.w.st.ExportItems(ctx, b.e)
	if err != nil {
		return blob.Info{}, err
	}
	todo := b.plan(items)
	b.total = len(items)
	b.done = len(items) - len(todo)
	if len(todo) == 0 {
		return blob.Info{}, b.nothingToExport(len(items))
	}

	key := exportKey(b.e, b.token)
	if err := b.w.discardUntilNamed(ctx, tasks.TypeExport, key); err != nil {
		return blob.Info{}, err
	}
	bw, err := b.w.blobs.Create(ctx, key)
	if err != nil {
		return blob.Info{}, err
	}
	defer bw.Abort()
	archive, err := render.NewArchive(bw, b.w.engine, preset, b.settings, b.title(ctx))
	if err != nil {
		return blob.Info{}, err
	}
	read := func(ctx context.Context, i int) ([]byte, error) { return b.source(ctx, preset, todo[i]) }
	err = archive.Write(ctx, renderItems(todo), read, func(i int, err error) error {
		if err != nil {
			if err := b.skipOrFail(todo[i], err); err != nil {
				return err
			}
		}
		return b.advance(ctx)
	})
	if err != nil {
		return blob.Info{}, err
	}
	if archive.Written() == 0 {
		return blob.Info{}, b.nothingToExport(len(items))
	}
	if err := archive.Close(); err != nil {
		return blob.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, err
	}
	return bw.Commit()
}

func (b *exportBuild) nothingToExport(n int) error {
	if n == 0 {
		return badInput("nothing_to_export", "There are no finalized photos to export.")
	}
	return badInput("nothing_to_export", "None of the %d photos could be exported; see skipped for why.", n)
}

// plan sets aside the assets that cannot be exported and returns the rest.
func (b *exportBuild) plan(items []store.ExportItem) []store.ExportItem {
	var todo []store.ExportItem
	for _, it := range items {
		switch {
		case it.Status == store.AssetDuplicate:
			msg := "A copy of another asset of the project."
			if it.DuplicateOf != nil {
				msg = fmt.Sprintf("A copy of asset %s.", it.DuplicateOf)
			}
			b.skip(it, "duplicate", msg)
		case it.Status == store.AssetFailed:
			b.skip(it, "failed", "Processing failed: "+ptr.Value(it.ErrorMessage))
		case it.Status == store.AssetPendingUpload || it.ChecksumSHA256 == nil:
			b.skip(it, "not_uploaded", "The file was never uploaded and finalized.")
		case it.PreviewKey == nil && !b.settings.IncludeNotReady:
			b.skip(it, "not_ready", "The photo is still being processed and includeNotReady is false.")
		default:
			todo = append(todo, it)
		}
	}
	return todo
}

func (b *exportBuild) skip(it store.ExportItem, reason, msg string) {
	b.skipped = append(b.skipped, store.ExportSkip{AssetID: it.AssetID, Filename: it.Filename, Reason: reason, Message: msg})
}

// skipOrFail lists an asset whose own file is at fault (missing, changed,
// undecodable) as skipped; any other error fails the attempt.
func (b *exportBuild) skipOrFail(it store.ExportItem, err error) error {
	var coded jobs.CodedError
	var img *imaging.Error
	switch {
	case errors.As(err, &coded):
		b.skip(it, coded.ErrorCode(), coded.Error())
	case errors.As(err, &img):
		b.skip(it, img.Code, img.Message)
	default:
		return err
	}
	return nil
}

// title heads the pages of a contact sheet: the project's title.
func (b *exportBuild) title(ctx context.Context) string {
	p, err := b.w.st.Project(ctx, b.e.UserID, b.e.ProjectID)
	if err != nil {
		return ""
	}
	return p.Title
}

// source reads the image a photo is drawn from: its preview when the
// preset draws from previews and ingest made one, else its original,
// checked against its checksum.
func (b *exportBuild) source(ctx context.Context, preset render.Preset, it store.ExportItem) ([]byte, error) {
	if preset.FromPreview && it.PreviewKey != nil {
		f, _, err := b.w.blobs.Open(ctx, *it.PreviewKey)
		if err == nil {
			defer f.Close()
			return io.ReadAll(f)
		}
		if !errors.Is(err, blob.ErrNotFound) {
			return nil, err
		}
	}
	return b.w.readOriginal(ctx, &store.Asset{BlobKey: it.BlobKey, ChecksumSHA256: it.ChecksumSHA256})
}

func renderItems(items []store.ExportItem) []render.Item {
	out := make([]render.Item, len(items))
	for i, it := range items {
		out[i] = render.Item{ID: it.AssetID, Filename: it.Filename, CapturedAt: it.CapturedAt, CapturedOffset: it.CapturedOffset}
	}
	return out
}

// advance counts one photo handled and, every few, records and publishes
// the progress. It also notices a cancel that reached only the database.
func (b *exportBuild) advance(ctx context.Context) error {
	b.done++
	if b.done-b.last < exportProgressEvery && time.Since(b.lastAt) < exportProgressAfter {
		return nil
	}
	b.last, b.lastAt = b.done, time.Now()
	// The last step, publishing, belongs to FinishExport.
	p := 0.99 * float64(b.done) / float64(b.total)
	running, err := b.w.st.ExportProgress(ctx, b.e.ID, b.token, p)
	if err != nil {
		return err
	}
	if !running {
		return errExportCanceled
	}
	b.w.publishExport(ctx, b.e, exportEvent{ExportID: b.e.ID, Status: store.JobRunning, Progress: p, Skipped: len(b.skipped)})
	return nil
}
