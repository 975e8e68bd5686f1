package worker

import (
	"bytes"
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
	"lightbox/jobs"
	"lightbox/ptr"
	"lightbox/render"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/tasks/queuestate"
	"lightbox/xmp"
)

// errExportCanceled stops a build whose export was canceled meanwhile.
var errExportCanceled = errors.New("export canceled")

type exportEvent struct {
	ExportID uuid.UUID       `json:"exportId"`
	Status   store.JobStatus `json:"status"`
	Progress float64         `json:"progress"`
	Skipped  int             `json:"skipped"`
	Error    *jobs.Failure   `json:"error"`
}

func init() { handle(tasks.TypeExport, (*Worker).export) }

// export builds an export's archive, a step at a time (see exportStep),
// yielding its slot between steps while other work waits. The archive
// streams into a blob writer that publishes it only on Commit, after an
// fsync; any failure, cancellation included, aborts the writer, so a run
// leaves either a whole archive or nothing. A retry goes on from the steps
// recorded. Photos that cannot be exported are listed in the export's
// skipped list with a reason rather than failing it.
//
// Each run writes under its own token, and its archive under its own key.
// A run handed back at a stop may still be ending when the next run has
// started: it is then stale, and stops without writing, canceling or
// deleting anything of the next run's. A run's archive key is a discard
// from before it is written until FinishExport names it, so an archive no
// export keeps (the run died, was taken over or canceled, and its own
// delete failed) is deleted by the sweeper; so is each part, a day after
// it was drawn, unless a run deleted it first.
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
		if e.Status == store.JobCanceled { // between two runs
			newExportBuild(w, e).dropParts(ctx)
			w.exportCanceled(ctx, e)
		}
		return nil // done, canceled or expired: nothing to build
	}
	w.exportChanged(ctx, e)

	b := newExportBuild(w, e)
	info, err := b.run(ctx)
	if errors.Is(err, errExportYield) {
		return tasks.RateLimited("other work waiting", exportYield)
	}

	err = w.tracker.Interrupted(ctx, err)
	// Record the outcome even when the task's own context has ended.
	ctx = context.WithoutCancel(ctx)
	if err == nil {
		done, ferr := w.st.FinishExport(ctx, e.ID, b.token, info.Key, info.Size, b.skipped)
		switch {
		case ferr == nil:
			b.dropParts(ctx)
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
			b.dropParts(ctx)
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
		b.dropParts(ctx)
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
		if failed.Status != store.JobQueued {
			b.dropParts(ctx) // a rerun starts afresh
		}
		w.exportChanged(ctx, failed)
	case errors.Is(ferr, store.ErrStaleRun):
		return w.exportStale(e, b.token)
	case errors.Is(ferr, store.ErrNotFound):
		b.dropParts(ctx)
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
	w.app.ExportChanged(ctx, w.log, e)
}

func (w *Worker) publishExport(ctx context.Context, e *store.Export, ev exportEvent) {
	batch := uuid.Nil
	if e.BatchID != nil {
		batch = *e.BatchID
	}
	w.tracker.Tell(ctx, events.ExportUpdated, e.ProjectID, batch, ev)
}

// exportCanceled finishes a cancel the build noticed: the export's batch
// is canceled as any batch is (jobs.Dispatcher.CancelBatch), so its job is
// not recorded done, the user's next export is admitted and webhooks hear
// of the batch, and listeners are told. The cancel ends this very task,
// which is ending anyway: what follows runs on a context it cannot end.
func (w *Worker) exportCanceled(ctx context.Context, e *store.Export) {
	ctx = context.WithoutCancel(ctx)
	if e.BatchID != nil {
		if _, _, err := w.jobs.CancelBatch(ctx, w.log, e.ProjectID, *e.BatchID); err != nil {
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

// An export is built in steps of a few photos, each rendered one after
// another into a file of its own (a part), and put together at the end by
// copying the parts into the archive. After each step the run records how
// far it is and, if other work waits in the queues this worker serves above
// low (another user's thumbnails or ingest, another user's export), yields
// its slot: the task comes back a second later and the next run goes on
// where this one stopped. One export therefore holds one slot and one core
// for at most a step at a time while others wait, whatever its size.
const (
	// exportStep is how many photos a step renders before it records.
	exportStep = 8
	// exportRunFor bounds one run even when nothing waits, well within
	// the task's timeout.
	exportRunFor = 5 * time.Minute
	// exportYield is how long a run that yielded waits to be picked again.
	exportYield = time.Second
	// exportPartsKept is how long a part is kept when no run deletes it (a
	// run died, or the export was canceled between runs): the sweep
	// deletes it then. A part missing when the archive is put together is
	// drawn again.
	exportPartsKept = 24 * time.Hour
	// exportReportEvery is how often putting an archive together records
	// its progress, and notices a cancel.
	exportReportEvery = 2 * time.Second
)

// errExportYield ends a run that stepped aside for other work.
var errExportYield = errors.New("export yields to other work")

// exportBuild is one run of an export.
type exportBuild struct {
	w        *Worker
	e        *store.Export
	token    uuid.UUID // the run's token, which its writes name
	preset   render.Preset
	settings render.Settings
	started  time.Time

	plan      []uuid.UUID // the assets the export covers, in order
	itemsDone int         // of plan, handled: drawn, or skipped
	pages     int         // contact sheet pages drawn
	skipped   []store.ExportSkip
}

func newExportBuild(w *Worker, e *store.Export) *exportBuild {
	b := &exportBuild{w: w, e: e, started: time.Now(), plan: e.Plan, itemsDone: e.ItemsDone, pages: e.Pages}
	if e.RunToken != nil {
		b.token = *e.RunToken
	}
	b.preset, _ = render.Lookup(e.Preset)
	json.Unmarshal(e.Skipped, &b.skipped)
	return b
}

// run builds the export from where earlier runs stopped: steps until the
// plan is drawn, then the archive. errExportYield means it stepped aside.
func (b *exportBuild) run(ctx context.Context) (blob.Info, error) {
	if b.preset.Name == "" {
		return blob.Info{}, tasks.Permanent(fmt.Errorf("export preset %q is unknown", b.e.Preset))
	}
	if err := json.Unmarshal(b.e.Settings, &b.settings); err != nil {
		return blob.Info{}, tasks.Permanent(fmt.Errorf("export settings: %w", err))
	}
	if b.plan == nil {
		ids, err := b.w.st.ExportPlan(ctx, b.e, b.settings.Pairs)
		if err != nil {
			return blob.Info{}, err
		}
		if b.plan, err = b.w.st.SetExportPlan(ctx, b.e.ID, b.token, append([]uuid.UUID{}, ids...)); err != nil {
			return blob.Info{}, err
		}
	}
	if len(b.plan) == 0 {
		return blob.Info{}, b.nothingToExport()
	}
	for b.itemsDone < len(b.plan) {
		if err := b.step(ctx); err != nil {
			return blob.Info{}, err
		}
		if b.itemsDone < len(b.plan) && b.yields(ctx) {
			return blob.Info{}, errExportYield
		}
	}
	return b.assemble(ctx)
}

// yields says whether the run should give its slot up now.
func (b *exportBuild) yields(ctx context.Context) bool {
	if time.Since(b.started) > exportRunFor {
		return true
	}
	// A check that fails lets the export go on: it only orders work.
	waiting, _ := queuestate.Waiting(ctx, b.w.rdb, b.w.exportYieldsTo)
	return waiting
}

// step draws the next photos of the plan, one at a time: exportStep of
// them, or a contact sheet's page, and records how far the export is.
func (b *exportBuild) step(ctx context.Context) error {
	var sheet *render.Sheet
	if b.preset.Name == render.PresetContactSheet {
		var err error
		if sheet, err = render.NewSheet(b.w.engine, b.settings, b.title(ctx), b.pages); err != nil {
			return tasks.Permanent(err)
		}
	}
	for b.itemsDone < len(b.plan) {
		ids := b.plan[b.itemsDone:min(b.itemsDone+exportStep, len(b.plan))]
		items, err := b.items(ctx, ids)
		if err != nil {
			return err
		}
		for i, id := range ids {
			if err := b.draw(ctx, sheet, id, items[i]); err != nil {
				return err
			}
			b.itemsDone++
			if sheet != nil && sheet.Full() {
				break
			}
		}
		if sheet == nil || sheet.Full() {
			break
		}
	}
	if sheet != nil && !sheet.Empty() { // a full page, or the last
		page, err := sheet.Page()
		if err != nil {
			return err
		}
		if err := b.putPart(ctx, b.pageKey(b.pages+1), page); err != nil {
			return err
		}
		b.pages++
	}
	return b.report(ctx, 0.99*float64(b.itemsDone)/float64(len(b.plan)))
}

// items reads the assets of ids, in their order; nil for one deleted.
func (b *exportBuild) items(ctx context.Context, ids []uuid.UUID) ([]*store.ExportItem, error) {
	found, err := b.w.st.ExportItems(ctx, b.e, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*store.ExportItem, len(ids))
	j := 0
	for i, id := range ids {
		if j < len(found) && found[j].AssetID == id {
			out[i] = &found[j]
			j++
		}
	}
	return out, nil
}

// draw renders one asset of the plan into its part, or onto the sheet, or
// lists it as skipped. An original to be copied as it is (full_res, no
// edit drawn) is not drawn: the archive copies it.
func (b *exportBuild) draw(ctx context.Context, sheet *render.Sheet, id uuid.UUID, it *store.ExportItem) error {
	if b.unfit(id, it) {
		return nil
	}
	edit := b.edit(*it)
	if b.preset.Name == render.PresetFullRes && edit == nil {
		return nil
	}
	var err error
	if sheet != nil {
		var src []byte
		if src, err = b.cellSource(ctx, *it, edit); err == nil {
			err = sheet.Add(ctx, renderItem(*it, false), src)
		}
	} else {
		var out []byte
		if out, err = b.photo(ctx, *it, edit); err == nil {
			return b.putPart(ctx, b.partKey(id), out)
		}
	}
	if err != nil {
		return b.skipOrFail(*it, err)
	}
	return nil
}

// edit is the edit an asset is drawn with: its newest, unless the export
// leaves edits out; nil for none.
func (b *exportBuild) edit(it store.ExportItem) *render.Edit {
	if !b.settings.IncludeEdits || len(it.EditParams) == 0 {
		return nil
	}
	e, problems := render.ParseEdit(it.EditParams)
	if len(problems) > 0 {
		// Stored params were checked when they were saved.
		b.w.log.Warn("an edit's stored params no longer parse; the photo is exported unedited", "asset", it.AssetID, "problems", problems)
		return nil
	}
	return &e
}

// photo renders an asset's file for the preset from its original, with
// edit when it has one.
func (b *exportBuild) photo(ctx context.Context, it store.ExportItem, edit *render.Edit) ([]byte, error) {
	original, err := b.original(ctx, it)
	if err != nil {
		return nil, err
	}
	if edit != nil {
		return render.EditedPhoto(ctx, b.w.engine, b.preset, b.settings, original, shownSize(it.WidthPx, it.HeightPx), *edit)
	}
	return render.Photo(ctx, b.w.engine, b.preset, b.settings, original)
}

// cellSource is what a contact sheet cell is drawn from: the preview of
// the photo as exported (its edit's, when drawn with one), smaller to
// decode than the original; else one made from the original.
func (b *exportBuild) cellSource(ctx context.Context, it store.ExportItem, edit *render.Edit) ([]byte, error) {
	key := it.PreviewKey
	if edit != nil {
		key = it.EditPreviewKey
	}
	if key != nil {
		data, err := b.readPart(ctx, *key)
		if !errors.Is(err, blob.ErrNotFound) {
			return data, err
		}
	}
	original, err := b.original(ctx, it)
	if err != nil || edit == nil {
		return original, err
	}
	web, _ := render.Lookup(render.PresetWeb)
	return render.EditedPhoto(ctx, b.w.engine, web, render.Settings{LongEdge: imaging.DefaultPreviewSize, Quality: 92}, original,
		shownSize(it.WidthPx, it.HeightPx), *edit)
}

// unfit lists an asset that cannot be exported as skipped, and says so.
func (b *exportBuild) unfit(id uuid.UUID, it *store.ExportItem) bool {
	switch {
	case it == nil:
		b.skipped = append(b.skipped, store.ExportSkip{AssetID: id, Reason: "deleted", Message: "The photo was deleted."})
	case it.Status == store.AssetDuplicate:
		msg := "A copy of another asset of the project."
		if it.DuplicateOf != nil {
			msg = fmt.Sprintf("A copy of asset %s.", it.DuplicateOf)
		}
		b.skip(*it, "duplicate", msg)
	case it.Status == store.AssetFailed:
		b.skip(*it, "failed", "Processing failed: "+ptr.Value(it.ErrorMessage))
	case it.Status == store.AssetPendingUpload || it.ChecksumSHA256 == nil:
		b.skip(*it, "not_uploaded", "The file was never uploaded and finalized.")
	case it.PreviewKey == nil && !b.settings.IncludeNotReady:
		b.skip(*it, "not_ready", "The photo is still being processed and includeNotReady is false.")
	default:
		return false
	}
	return true
}

func (b *exportBuild) nothingToExport() error {
	if len(b.plan) == 0 {
		return badInput("nothing_to_export", "There are no finalized photos to export.")
	}
	return badInput("nothing_to_export", "None of the %d photos could be exported; see skipped for why.", len(b.plan))
}

func (b *exportBuild) skip(it store.ExportItem, reason, msg string) {
	b.skipped = append(b.skipped, store.ExportSkip{AssetID: it.AssetID, Filename: it.Filename, Reason: reason, Message: msg})
}

// skipOrFail lists an asset whose own file is at fault (missing, changed,
// undecodable) as skipped; any other error fails the run.
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

// partKey and pageKey are where a step keeps what it drew: a photo's
// render, a contact sheet's page. They are the export's, not the run's: a
// later run goes on from them, and two runs draw the same bytes.
func (b *exportBuild) partKey(asset uuid.UUID) string { return blob.ExportPartKey(b.e.ID, asset) }
func (b *exportBuild) pageKey(n int) string           { return blob.ExportPageKey(b.e.ID, n) }

// putPart keeps a part, discarded first so that the sweep deletes it
// should nothing else.
func (b *exportBuild) putPart(ctx context.Context, key string, data []byte) error {
	if err := b.w.st.DiscardAfter(ctx, []string{key}, time.Now().Add(exportPartsKept)); err != nil {
		return err
	}
	_, err := b.w.blobs.Put(ctx, key, bytes.NewReader(data), int64(len(data)))
	return err
}

// dropParts deletes the parts once the archive holds them, or nobody
// wants them (app.App.DropExportParts).
func (b *exportBuild) dropParts(ctx context.Context) { b.w.app.DropExportParts(ctx, b.w.log, b.e.ID) }

// assemble puts the archive together from the parts (the originals for
// full_res), in the plan's order, and publishes it under the run's key.
func (b *exportBuild) assemble(ctx context.Context) (blob.Info, error) {
	key := exportKey(b.e, b.token)
	if err := b.w.discardUntilNamed(ctx, tasks.TypeExport, key); err != nil {
		return blob.Info{}, err
	}
	bw, err := b.w.blobs.Create(ctx, key)
	if err != nil {
		return blob.Info{}, err
	}
	defer bw.Abort()
	archive := render.NewArchive(bw, b.preset, b.title(ctx))
	if b.preset.Name == render.PresetContactSheet {
		err = b.addPages(ctx, archive)
	} else {
		err = b.addFiles(ctx, archive)
	}
	if err != nil {
		return blob.Info{}, err
	}
	if archive.Written() == 0 {
		return blob.Info{}, b.nothingToExport()
	}
	if err := archive.Close(); err != nil {
		return blob.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, err
	}
	return bw.Commit()
}

func (b *exportBuild) addPages(ctx context.Context, archive *render.Archive) error {
	for n := 1; n <= b.pages; n++ {
		page, err := b.readPart(ctx, b.pageKey(n))
		if errors.Is(err, blob.ErrNotFound) {
			// A page lost (kept past exportPartsKept): draw them all again.
			b.itemsDone, b.pages, b.skipped = 0, 0, nil
			if err := b.report(ctx, 0); err != nil {
				return err
			}
			return fmt.Errorf("page %d of the contact sheet was lost; the sheet is drawn again", n)
		}
		if err != nil {
			return err
		}
		if err := archive.AddPage(page); err != nil {
			return err
		}
	}
	return nil
}

func (b *exportBuild) addFiles(ctx context.Context, archive *render.Archive) error {
	skipped := map[uuid.UUID]bool{}
	for _, s := range b.skipped {
		skipped[s.AssetID] = true
	}
	lastReport := time.Now()
	for from := 0; from < len(b.plan); from += 500 {
		ids := b.plan[from:min(from+500, len(b.plan))]
		items, err := b.items(ctx, ids)
		if err != nil {
			return err
		}
		for i, id := range ids {
			if skipped[id] || b.unfit(id, items[i]) {
				continue
			}
			data, drawn, err := b.file(ctx, *items[i])
			if err != nil {
				if err := b.skipOrFail(*items[i], err); err != nil {
					return err
				}
				continue
			}
			entry := renderItem(*items[i], drawn)
			if b.settings.XMP {
				if data, entry, err = b.withXMP(ctx, *items[i], data, entry); err != nil {
					return err
				}
			}
			if err := archive.AddFile(entry, bytes.NewReader(data)); err != nil {
				return err
			}
			if time.Since(lastReport) > exportReportEvery {
				lastReport = time.Now()
				if b.preset.Name == render.PresetFullRes {
					// Copying the originals is all of a full_res export's work.
					err = b.report(ctx, 0.99*float64(from+i+1)/float64(len(b.plan)))
				} else {
					err = b.report(ctx, 0.99)
				}
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// file is what goes in the zip for an asset, and whether it was drawn:
// its original for full_res without an edit, checked against its
// checksum, else its part (drawn again if lost).
func (b *exportBuild) file(ctx context.Context, it store.ExportItem) ([]byte, bool, error) {
	edit := b.edit(it)
	if b.preset.Name == render.PresetFullRes && edit == nil {
		data, err := b.original(ctx, it)
		return data, false, err
	}
	data, err := b.readPart(ctx, b.partKey(it.AssetID))
	if errors.Is(err, blob.ErrNotFound) {
		data, err = b.photo(ctx, it, edit)
	}
	return data, true, err
}

func (b *exportBuild) readPart(ctx context.Context, key string) ([]byte, error) {
	f, _, err := b.w.blobs.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// title heads the pages of a contact sheet: the project's title.
func (b *exportBuild) title(ctx context.Context) string {
	p, err := b.w.st.Project(ctx, b.e.UserID, b.e.ProjectID)
	if err != nil {
		return ""
	}
	return p.Title
}

// original reads an asset's original, checked against its checksum.
func (b *exportBuild) original(ctx context.Context, it store.ExportItem) ([]byte, error) {
	return b.w.readOriginal(ctx, &store.Asset{BlobKey: it.BlobKey, ChecksumSHA256: it.ChecksumSHA256})
}

// withXMP carries the owner's decisions and the photo's captions to an
// editor: in a sidecar beside an original (merged into the one uploaded
// with it), embedded in a drawn JPEG.
func (b *exportBuild) withXMP(ctx context.Context, it store.ExportItem, data []byte, entry render.Item) ([]byte, render.Item, error) {
	d := xmp.Decisions{Rating: ptr.Value(it.Rating), Picked: it.Picked, Rejected: it.Rejected,
		ColorLabel: ptr.Value(it.ColorLabel), Keywords: it.Keywords}
	// Captions are a free-form object; the ones that are strings are kept.
	_ = json.Unmarshal(it.IPTC, &d.IPTC)
	o := xmp.WriteOptions{Pick: b.settings.Picked}
	// Merged into the photographer's own sidecar, their editor's develop
	// settings and everything else Lightbox does not own go with it. A
	// rendered JPEG has its edit drawn in, so it takes none of that.
	var packet []byte
	if it.SidecarKey != nil && !entry.Rendered {
		own, err := b.readPart(ctx, *it.SidecarKey)
		if err != nil && !errors.Is(err, blob.ErrNotFound) {
			return nil, entry, err
		}
		if own != nil {
			packet, _ = xmp.Write(own, d, o) // unmergeable: a packet of its own, below
		}
	}
	var err error
	if packet == nil {
		packet, err = xmp.Write(nil, d, o)
	}
	if err != nil {
		return nil, entry, tasks.Permanent(fmt.Errorf("XMP for %s: %w", it.Filename, err))
	}
	if !entry.Rendered {
		entry.Sidecar, entry.SidecarNaming = packet, b.settings.XMPNaming
		return data, entry, nil
	}
	embedded, err := xmp.EmbedJPEG(data, packet)
	if err != nil {
		return nil, entry, tasks.Permanent(fmt.Errorf("XMP for %s: %w", it.Filename, err))
	}
	return embedded, entry, nil
}

func renderItem(it store.ExportItem, drawn bool) render.Item {
	return render.Item{ID: it.AssetID, Filename: it.Filename, CapturedAt: it.CapturedAt, CapturedOffset: it.CapturedOffset, Rendered: drawn}
}

// report records how far the export is and publishes it. It also notices
// a cancel that reached only the database.
func (b *exportBuild) report(ctx context.Context, progress float64) error {
	running, err := b.w.st.ExportProgress(ctx, b.e.ID, b.token,
		store.ExportStep{ItemsDone: b.itemsDone, Pages: b.pages, Skipped: b.skipped, Progress: progress})
	if err != nil {
		return err
	}
	if !running {
		return errExportCanceled
	}
	b.w.publishExport(ctx, b.e, exportEvent{ExportID: b.e.ID, Status: store.JobRunning, Progress: progress, Skipped: len(b.skipped)})
	return nil
}
