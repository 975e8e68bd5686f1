package worker_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/app"
	"lightbox/blob"
	"lightbox/events"
	"lightbox/render"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// ready records an uploaded photo and runs its ingest, so it has its
// preview: a photo the pipeline is done with.
func (h *harness) ready(project uuid.UUID, name string) uuid.UUID {
	h.t.Helper()
	return h.ingested(project, h.notReady(project, name))
}

// readyCopy is ready for a copy of a corpus photo under another name,
// made distinct by bytes after the JPEG end marker, which decoders ignore.
func (h *harness) readyCopy(project uuid.UUID, name, as string) uuid.UUID {
	h.t.Helper()
	data := append(readCorpus(h.t, name), []byte(uuid.NewString())...)
	asset, _ := h.finalizeWithoutEnqueue(project, data)
	h.env.SetAssets(h.t, testenv.AssetRow{Filename: as}, "id = $1", asset)
	return h.ingested(project, asset)
}

func (h *harness) ingested(project, asset uuid.UUID) uuid.UUID {
	h.t.Helper()
	var job uuid.UUID
	h.env.DB.Get(&job, `SELECT id FROM jobs WHERE asset_id = $1 AND type = 'asset:ingest'`, asset)
	h.runIngest(project, asset, job) // bad files fail here, as they would in the queue
	return asset
}

// notReady records an uploaded photo whose ingest has not run yet.
func (h *harness) notReady(project uuid.UUID, name string) uuid.UUID {
	h.t.Helper()
	asset, _ := h.finalizeWithoutEnqueue(project, readCorpus(h.t, name))
	h.env.SetAssets(h.t, testenv.AssetRow{Filename: filepath.Base(name)}, "id = $1", asset)
	return asset
}

// newExport records an export and its job as the API does, and returns
// its id and task.
func (h *harness) newExport(project uuid.UUID, preset string, s render.Settings, assets ...uuid.UUID) (uuid.UUID, *asynq.Task) {
	h.t.Helper()
	raw, _ := json.Marshal(s)
	expires := time.Now().Add(7 * 24 * time.Hour)
	e := &store.Export{ID: uuid.New(), ProjectID: project, UserID: h.owner, Preset: preset, Settings: raw, ExpiresAt: &expires}
	for _, a := range assets {
		e.AssetIDs = append(e.AssetIDs, a)
	}
	h.env.Tx(h.t, func(tx *store.Store) error { return app.RecordExport(context.Background(), tx, e) })
	return e.ID, tasks.NewTask(tasks.ExportPayload{Job: tasks.Job{JobID: *e.JobID, ProjectID: project}, ExportID: e.ID})
}

func (h *harness) export(id uuid.UUID) *store.Export {
	h.t.Helper()
	e, err := h.env.Store.ExportByID(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return e
}

func (h *harness) skipped(id uuid.UUID) map[string]string {
	h.t.Helper()
	var skips []store.ExportSkip
	if err := json.Unmarshal(h.export(id).Skipped, &skips); err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range skips {
		if s.Message == "" {
			h.t.Errorf("skip of %s has no message", s.Filename)
		}
		out[s.Filename] = s.Reason
	}
	return out
}

// archive opens a finished export's zip from the blob store.
func (h *harness) archive(id uuid.UUID) *zip.Reader {
	h.t.Helper()
	data := h.exportFile(id)
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		h.t.Fatalf("not a valid zip: %v", err)
	}
	return z
}

// exportFile reads a finished export's file from the blob store.
func (h *harness) exportFile(id uuid.UUID) []byte {
	h.t.Helper()
	e := h.export(id)
	if e.Status != "done" || e.BlobKey == nil {
		h.t.Fatalf("export %s, error %v %v; want done with a file", e.Status, deref(e.ErrorCode), deref(e.ErrorMessage))
	}
	f, info, err := h.blobs.Open(context.Background(), *e.BlobKey)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	data, _ := io.ReadAll(f)
	if int64(len(data)) != *e.ByteSize || info.Size != *e.ByteSize {
		h.t.Fatalf("archive is %d bytes, the export says %d", len(data), *e.ByteSize)
	}
	return data
}

// entry reads one zip entry and, for an image, its size.
func entry(t *testing.T, f *zip.File) ([]byte, image.Point) {
	t.Helper()
	r, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return data, image.Point{}
	}
	return data, img.Bounds().Size()
}

// tempFiles lists files left below the blob folder by writers that never
// committed.
func (h *harness) tempFiles() []string {
	h.t.Helper()
	var out []string
	filepath.WalkDir(h.cfg.DataDir+"/blobs", func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".upload-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// photos are the corpus files the preset test exports, with their size
// once oriented.
var exportPhotos = []struct {
	name string
	w, h int
}{
	{"photos/kite-2560x1600.jpg", 2560, 1600},
	{"photos/wood.jpg", 0, 0}, // read from its asset row
	{"odd/orientation-6.jpg", 50, 70},
	{"odd/rgba8.png", 0, 0},
}

func TestExportPresetsOnRealPhotos(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	size := map[string]image.Point{}
	originals := map[string][]byte{}
	ids := map[string]uuid.UUID{}
	for _, p := range exportPhotos {
		id := h.ready(project, p.name)
		ids[filepath.Base(p.name)] = id
		var w, ht int
		h.env.DB.QueryRow(`SELECT width_px, height_px FROM assets WHERE id = $1`, id).Scan(&w, &ht)
		if p.w != 0 && (w != p.w || ht != p.h) {
			t.Fatalf("%s ingested as %dx%d", p.name, w, ht)
		}
		size[filepath.Base(p.name)] = image.Pt(w, ht)
		originals[filepath.Base(p.name)] = readCorpus(t, p.name)
	}
	// Still processing: exported from its original by default.
	h.notReady(project, "photos/path-2560x1600.jpg")
	size["path-2560x1600.jpg"] = image.Pt(2560, 1600)
	originals["path-2560x1600.jpg"] = readCorpus(t, "photos/path-2560x1600.jpg")
	// Never exported: a file that failed and a duplicate.
	h.ready(project, "bad/html-named.jpg")
	dup := h.notReady(project, "photos/dune.jpg")
	h.env.SetAssets(t, testenv.AssetRow{Status: store.AssetDuplicate, DuplicateOf: ids["wood.jpg"]}, "id = $1", dup)
	wantSkipped := map[string]string{"html-named.jpg": "failed", "dune.jpg": "duplicate"}
	const exported = 5

	check := func(t *testing.T, preset string, s render.Settings, each func(name string, data []byte, got, orig image.Point)) []byte {
		id, task := h.newExport(project, preset, s)
		if err := h.runExport(context.Background(), task); err != nil {
			t.Fatal(err)
		}
		if got := h.skipped(id); len(got) != len(wantSkipped) || got["html-named.jpg"] != "failed" || got["dune.jpg"] != "duplicate" {
			t.Errorf("skipped %v, want %v", got, wantSkipped)
		}
		if each != nil {
			z := h.archive(id)
			if len(z.File) != exported {
				t.Fatalf("%d entries, want %d", len(z.File), exported)
			}
			for _, f := range z.File {
				data, got := entry(t, f)
				base := strings.TrimSuffix(f.Name, filepath.Ext(f.Name))
				var orig image.Point
				for n, sz := range size {
					if strings.TrimSuffix(n, filepath.Ext(n)) == base {
						orig = sz
					}
				}
				each(f.Name, data, got, orig)
			}
		}
		if n := h.count(`SELECT count(*) FROM jobs WHERE type = 'project:export' AND status = 'done' AND progress = 1 AND task_id = $1`, tasks.ExportID(id)); n != 1 {
			t.Errorf("the export's job is not done")
		}
		return h.exportFile(id)
	}

	t.Run("full_res", func(t *testing.T) {
		check(t, "full_res", render.Settings{IncludeNotReady: true}, func(name string, data []byte, _, _ image.Point) {
			if orig, ok := originals[name]; !ok || !bytes.Equal(data, orig) {
				t.Errorf("%s: not the original's bytes (known name: %v)", name, ok)
			}
		})
	})
	t.Run("web", func(t *testing.T) {
		check(t, "web", render.Settings{LongEdge: 2048, Quality: 85, IncludeNotReady: true}, func(name string, _ []byte, got, orig image.Point) {
			long := max(orig.X, orig.Y)
			want := orig
			if long > 2048 { // never enlarged
				want = image.Pt(orig.X*2048/long, orig.Y*2048/long)
			}
			if !strings.HasSuffix(name, ".jpg") || abs(got.X-want.X) > 1 || abs(got.Y-want.Y) > 1 {
				t.Errorf("%s: %v, want %v", name, got, want)
			}
		})
	})
	for _, c := range []struct {
		preset string
		w, h   int
	}{{"instagram_carousel", 1080, 1350}, {"story_9x16", 1080, 1920}} {
		t.Run(c.preset, func(t *testing.T) {
			check(t, c.preset, render.Settings{Width: c.w, Height: c.h, Quality: 90, IncludeNotReady: true}, func(name string, _ []byte, got, orig image.Point) {
				// The box's shape, as large as the photo covers, never enlarged.
				s := min(1, float64(orig.X)/float64(c.w), float64(orig.Y)/float64(c.h))
				want := image.Pt(int(float64(c.w)*s+0.5), int(float64(c.h)*s+0.5))
				if abs(got.X-want.X) > 1 || abs(got.Y-want.Y) > 1 {
					t.Errorf("%s: %v, want %v (%dx%d within %v)", name, got, want, c.w, c.h, orig)
				}
			})
		})
	}
	t.Run("contact_sheet_pdf", func(t *testing.T) {
		pages := testenv.PDFPages(t, check(t, "contact_sheet_pdf", render.Settings{PerPage: 2, Quality: 85, IncludeNotReady: true}, nil))
		if len(pages) != 3 {
			t.Errorf("%d pages, want 3 for 5 photos at 2 a page", len(pages))
		}
		for i, got := range pages {
			if got != image.Pt(1654, 2339) {
				t.Errorf("page %d: %v, want an A4 page of 1654x2339", i+1, got)
			}
		}
	})
	t.Run("includeNotReady false", func(t *testing.T) {
		id, task := h.newExport(project, "web", render.Settings{LongEdge: 640, Quality: 70})
		if err := h.runExport(context.Background(), task); err != nil {
			t.Fatal(err)
		}
		if z := h.archive(id); len(z.File) != exported-1 {
			t.Errorf("%d entries, want %d", len(z.File), exported-1)
		}
		if got := h.skipped(id)["path-2560x1600.jpg"]; got != "not_ready" {
			t.Errorf("the photo still processing was %q, want skipped as not_ready", got)
		}
	})

	// Progress went out as export.updated events, ending done.
	evs, _, err := events.NewPublisher(h.env.Redis, events.PublisherOptions{}).Since(context.Background(), project, 0)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, ev := range evs {
		if ev.Name == events.ExportUpdated {
			var e struct {
				Status   string
				Progress float64
			}
			json.Unmarshal(ev.Data, &e)
			states = append(states, e.Status)
		}
	}
	if len(states) < 6*3 || states[len(states)-1] != "done" || !strings.Contains(strings.Join(states, ","), "running,running") {
		t.Errorf("export.updated states %v", states)
	}
}

func abs(n int) int { return max(n, -n) }

func TestExportNamesAreUniqueAndOrderFollowsTheRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	a := h.ready(project, "photos/wood.jpg")
	b := h.ready(project, "photos/storm.jpg")
	c := h.ready(project, "photos/dune.jpg")
	h.env.SetAssets(t, testenv.AssetRow{Filename: "IMG_1.JPG"}, "id = $1", a)
	h.env.SetAssets(t, testenv.AssetRow{Filename: "img_1.jpeg"}, "id = $1", b)
	h.env.SetAssets(t, testenv.AssetRow{Filename: "IMG_1.jpg"}, "id = $1", c)
	id, task := h.newExport(project, "web", render.Settings{LongEdge: 320, Quality: 60}, c, a, b)
	if err := h.runExport(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range h.archive(id).File {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "IMG_1.jpg,IMG_1-2.jpg,img_1-3.jpg" {
		t.Fatalf("entries %v", names)
	}
}

func TestExportCrashMidwayIsRetriedCleanly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	for i := range 12 {
		h.readyCopy(project, []string{"photos/kite-2560x1600.jpg", "photos/path-2560x1600.jpg"}[i%2], fmt.Sprintf("%02d.jpg", i))
	}
	id, task := h.newExport(project, "web", render.Settings{LongEdge: 2048, Quality: 85, IncludeNotReady: true})

	// The attempt's context ends once it has written part of the archive,
	// as when the worker is stopped or the task times out.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- h.runExport(ctx, task) }()
	testenv.EventuallyEvery(t, "the export to make progress", 5*time.Minute, 5*time.Millisecond, func() bool { return h.export(id).Progress > 0 })
	cancel()
	if err := <-ran; err == nil {
		t.Fatal("the interrupted attempt succeeded")
	}
	e := h.export(id)
	if e.Progress == 0 || e.ItemsDone == 0 || e.BlobKey != nil {
		t.Fatalf("after the interruption: progress %v, %d photos drawn, file %v", e.Progress, e.ItemsDone, e.BlobKey)
	}
	if files := h.exportArchives(id); len(files) != 0 {
		t.Fatalf("a partial archive is visible: %v", files)
	}
	if tmp := h.tempFiles(); len(tmp) != 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}

	// The retry publishes a whole archive; the parts go once it holds them.
	if err := h.runExport(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	if files := h.exportFiles(id); len(files) != 1 {
		t.Fatalf("stored under the export: %v, want only its archive", files)
	}
	z := h.archive(id)
	if len(z.File) != 12 {
		t.Fatalf("%d entries after the retry, want 12", len(z.File))
	}
	for _, f := range z.File {
		if _, got := entry(t, f); max(got.X, got.Y) != 2048 {
			t.Errorf("%s: %v", f.Name, got)
		}
	}
	if tmp := h.tempFiles(); len(tmp) != 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}

	// A task that runs again after success changes nothing.
	before := *h.export(id)
	if err := h.runExport(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	if after := h.export(id); !after.UpdatedAt.Equal(before.UpdatedAt) || *after.BlobKey != *before.BlobKey {
		t.Fatal("a finished export was built again")
	}
}

func TestExportCanceledWhileRunningLeavesNoFile(t *testing.T) {
	t.Parallel()
	// The cancel reaches only Postgres (the queue's cancel signal is lost):
	// the build notices at its next progress report. A cancel of the
	// export's batch reaches only its job.
	for _, c := range []struct {
		name   string
		cancel func(*harness, uuid.UUID) error
	}{
		{"export", func(h *harness, id uuid.UUID) error {
			_, _, err := h.env.Store.CancelExport(context.Background(), id)
			return err
		}},
		{"batch", func(h *harness, id uuid.UUID) error {
			_, _, err := h.env.Store.CancelBatch(context.Background(), *h.export(id).BatchID)
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, nil)
			project := h.project()
			for i := range 12 {
				h.readyCopy(project, "photos/kite-2560x1600.jpg", fmt.Sprintf("%02d.jpg", i))
			}
			id, task := h.newExport(project, "story_9x16", render.Settings{Width: 1080, Height: 1920, Quality: 90, IncludeNotReady: true})
			ran := make(chan error, 1)
			go func() { ran <- h.runExport(context.Background(), task) }()
			testenv.EventuallyEvery(t, "the export to make progress", 5*time.Minute, 5*time.Millisecond, func() bool { return h.export(id).Progress > 0 })
			if err := c.cancel(h, id); err != nil {
				t.Error(err)
			}
			if err := <-ran; err != nil {
				t.Fatalf("a canceled export is not an error: %v", err)
			}
			if e := h.export(id); e.Status != "canceled" || e.BlobKey != nil {
				t.Fatalf("export %s, file %v", e.Status, e.BlobKey)
			}
			if n := h.count(`SELECT count(*) FROM exports e JOIN jobs j ON j.id = e.job_id
				WHERE e.id = $1 AND e.status = 'canceled' AND j.status = 'canceled'`, id); n != 1 {
				t.Fatal("the export and its job are not both recorded canceled")
			}
			if tmp := h.tempFiles(); len(tmp) != 0 {
				t.Fatalf("temporary files left: %v", tmp)
			}
		})
	}
}

// gatedBlobs is a blob store whose archives (the worker creates nothing
// else) stop at the gates a test sets: "create 2" holds the second archive
// before it is created, "commit 1" the first before it is published.
type gatedBlobs struct {
	blob.Store
	gates    map[string]gate
	archives atomic.Int32
}

// gate holds a run at a step until the test opens it.
type gate struct{ reached, open chan struct{} }

func (s *gatedBlobs) Create(ctx context.Context, key string) (blob.Writer, error) {
	n := s.archives.Add(1)
	s.stop(fmt.Sprintf("create %d", n))
	w, err := s.Store.Create(ctx, key)
	if err != nil {
		return nil, err
	}
	return gatedWriter{w, func() { s.stop(fmt.Sprintf("commit %d", n)) }}, nil
}

func (s *gatedBlobs) stop(step string) {
	if g, ok := s.gates[step]; ok {
		close(g.reached)
		<-g.open
	}
}

type gatedWriter struct {
	blob.Writer
	beforeCommit func()
}

func (w gatedWriter) Commit() (blob.Info, error) {
	w.beforeCommit()
	return w.Writer.Commit()
}

// await waits for ch to close.
func await(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// runExport runs an export's task to its end as Asynq would: a run that
// yields its slot between steps is run again.
func (h *harness) runExport(ctx context.Context, task *asynq.Task) error {
	for {
		err := h.w.Handler().ProcessTask(ctx, task)
		var yielded *tasks.RateLimitedError
		if !errors.As(err, &yielded) {
			return err
		}
	}
}

// exportArchives lists the archives stored under an export's folder,
// leaving out the parts its steps drew.
func (h *harness) exportArchives(id uuid.UUID) []string {
	h.t.Helper()
	var out []string
	for _, f := range h.exportFiles(id) {
		if !strings.Contains(f, "/parts/") {
			out = append(out, f)
		}
	}
	return out
}

// exportFiles lists the files stored under an export's folder.
func (h *harness) exportFiles(id uuid.UUID) []string {
	h.t.Helper()
	var out []string
	root := h.cfg.DataDir + "/blobs"
	filepath.WalkDir(root+"/exports/"+id.String(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// TestExportRunSupersededByTheNextLeavesItAlone runs an export twice at
// once, as when a stopped worker hands it back and another worker starts it
// while the first run is still ending. The first run, superseded, changes
// nothing: the second publishes its archive, and neither the export nor
// its job or batch is canceled or failed.
func TestExportRunSupersededByTheNextLeavesItAlone(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, gates ...string) (*harness, uuid.UUID, *asynq.Task, map[string]gate) {
		dir := t.TempDir()
		disk, err := blob.NewDisk(dir + "/blobs")
		if err != nil {
			t.Fatal(err)
		}
		g := map[string]gate{}
		for _, step := range gates {
			g[step] = gate{make(chan struct{}), make(chan struct{})}
		}
		h := newHarnessOn(t, map[string]string{"DATA_DIR": dir}, &gatedBlobs{Store: disk, gates: g})
		project := h.project()
		for i := range 6 {
			h.readyCopy(project, "photos/wood.jpg", fmt.Sprintf("%02d.jpg", i))
		}
		id, task := h.newExport(project, "web", render.Settings{LongEdge: 320, Quality: 60, IncludeNotReady: true})
		return h, id, task, g
	}
	run := func(h *harness, ctx context.Context, task *asynq.Task) <-chan error {
		ended := make(chan error, 1)
		go func() { ended <- h.w.Handler().ProcessTask(ctx, task) }()
		return ended
	}
	ended := func(t *testing.T, what string, run <-chan error) error {
		t.Helper()
		select {
		case err := <-run:
			return err
		case <-time.After(5 * time.Minute):
			t.Fatalf("timed out waiting for %s", what)
			return nil
		}
	}
	check := func(t *testing.T, h *harness, id uuid.UUID, first error) {
		t.Helper()
		if first != nil {
			t.Errorf("the superseded run ended with %v, want quietly", first)
		}
		if n := h.count(`SELECT count(*) FROM exports e JOIN jobs j ON j.id = e.job_id JOIN batches b ON b.id = e.batch_id
			WHERE e.id = $1 AND e.status = 'done' AND j.status = 'done' AND b.status = 'completed'`, id); n != 1 {
			var s string
			h.env.DB.Get(&s, `SELECT e.status || ' ' || coalesce(e.error_code, '-') || ', job ' || j.status || ', batch ' || b.status
				FROM exports e JOIN jobs j ON j.id = e.job_id JOIN batches b ON b.id = e.batch_id WHERE e.id = $1`, id)
			t.Fatalf("export %s; want the export and its job done and its batch completed", s)
		}
		if z := h.archive(id); len(z.File) != 6 {
			t.Errorf("%d entries, want 6", len(z.File))
		}
		if files := h.exportFiles(id); len(files) != 1 || files[0] != *h.export(id).BlobKey {
			t.Errorf("stored under the export: %v, want only its archive", files)
		}
		if tmp := h.tempFiles(); len(tmp) != 0 {
			t.Errorf("temporary files left: %v", tmp)
		}
	}

	// The first run publishes its archive after the second has finished.
	t.Run("finishes last", func(t *testing.T) {
		h, id, task, g := setup(t, "commit 1")
		first := run(h, context.Background(), task)
		await(t, "the first run to build its archive", g["commit 1"].reached)
		if err := h.w.Handler().ProcessTask(context.Background(), task); err != nil {
			t.Fatalf("the second run: %v", err)
		}
		close(g["commit 1"].open)
		check(t, h, id, ended(t, "the first run", first))
	})

	// The first run's context ends once the second has started; it records
	// its failure while the second builds.
	t.Run("fails while the next runs", func(t *testing.T) {
		h, id, task, g := setup(t, "create 1", "create 2")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		first := run(h, ctx, task)
		await(t, "the first run to start", g["create 1"].reached)
		second := run(h, context.Background(), task)
		await(t, "the second run to start", g["create 2"].reached)
		cancel()
		close(g["create 1"].open)
		firstErr := ended(t, "the first run", first)
		close(g["create 2"].open)
		if err := ended(t, "the second run", second); err != nil {
			t.Fatalf("the second run: %v", err)
		}
		check(t, h, id, firstErr)
	})
}

func TestExportWithNothingToExportFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	h.ready(project, "bad/empty.jpg")
	id, task := h.newExport(project, "full_res", render.Settings{IncludeNotReady: true})
	err := h.w.Handler().ProcessTask(context.Background(), task)
	if err == nil || !tasks.IsPermanent(err) {
		t.Fatalf("err %v, want a permanent failure", err)
	}
	e := h.export(id)
	if e.Status != "failed" || deref(e.ErrorCode) != "nothing_to_export" || h.skipped(id)["empty.jpg"] != "failed" {
		t.Fatalf("export %s %s, skipped %s", e.Status, deref(e.ErrorCode), e.Skipped)
	}
}

func TestExportRunsAheadOfQueuedIngests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"WORKER_CONCURRENCY": "2"})
	project := h.project()
	if w := h.cfg.QueueWeights; !maps.Equal(w, tasks.DefaultWeights) {
		t.Fatalf("weights %v, want the defaults", w)
	}
	var chosen []uuid.UUID
	for _, p := range []string{"kite-2560x1600.jpg", "wood.jpg", "storm.jpg", "dune.jpg"} {
		chosen = append(chosen, h.ready(project, "photos/"+p))
	}
	// 100 real uploads wait for ingest on the default queue: an export
	// behind them in one queue would find none waiting, one ahead of them
	// nearly all.
	const ingests = 100
	photo := readCorpus(t, "photos/wood.jpg")
	for range ingests {
		data := append(bytes.Clone(photo), []byte(uuid.NewString())...) // distinct bytes, same pixels
		h.finalize(project, "queued-"+uuid.NewString()+".jpg", data)
	}
	id, task := h.newExport(project, "web", render.Settings{LongEdge: 2048, Quality: 85, IncludeNotReady: true}, chosen...)
	if err := tasks.Enqueue(context.Background(), h.queue, task); err != nil {
		t.Fatal(err)
	}
	h.run()
	testenv.Eventually(h.t, "the export", patience, func() bool {
		s := h.export(id).Status
		return s == "done" || s == "failed"
	})
	pending := h.count(`SELECT count(*) FROM assets WHERE status = 'uploaded' AND filename LIKE 'queued-%'`)
	if len(h.archive(id).File) != len(chosen) {
		t.Fatal("the export is incomplete")
	}
	t.Logf("ingests still waiting when the export finished: %d of %d", pending, ingests)
	if pending < ingests/2 {
		t.Fatalf("only %d of %d ingests were still waiting when the export finished", pending, ingests)
	}
}

func TestSweepDeletesExpiredExports(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	h.ready(project, "photos/wood.jpg")
	keep, task := h.newExport(project, "full_res", render.Settings{IncludeNotReady: true})
	if err := h.runExport(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	old, task := h.newExport(project, "full_res", render.Settings{IncludeNotReady: true})
	if err := h.runExport(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	key := *h.export(old).BlobKey
	if e := h.export(keep); e.ExpiresAt == nil || e.ExpiresAt.Sub(time.Now()) < 7*24*time.Hour-time.Minute {
		t.Fatalf("a new export expires at %v, want in 7 days", e.ExpiresAt)
	}
	h.env.Age(t, "exports", "expires_at", time.Second, "id = $1", old)
	h.sweep()

	if e := h.export(old); e.Status != "expired" || e.BlobKey != nil {
		t.Fatalf("expired export: %s, file %v", e.Status, e.BlobKey)
	}
	if _, err := h.blobs.Stat(context.Background(), key); err == nil {
		t.Fatal("the expired export's file is still stored")
	}
	h.archive(keep) // the other one is untouched
}

// TestExportArchiveNoExportKeepsIsSwept publishes an archive that no
// export comes to name, each way a run can leave one: taken over by the
// next run, canceled, or dead before it recorded it; the run's own delete
// of it fails. Once the run's timeout has passed, the sweep deletes it and
// keeps the archive of the run that finished.
func TestExportArchiveNoExportKeepsIsSwept(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		died bool // the first archive is published, then the run dies
		// meanwhile runs while the first run is held before publishing.
		meanwhile func(*harness, uuid.UUID, *asynq.Task)
		done      bool // the export ends done, with a later run's archive
	}{
		{name: "superseded", done: true, meanwhile: func(h *harness, _ uuid.UUID, task *asynq.Task) {
			if err := h.w.Handler().ProcessTask(context.Background(), task); err != nil {
				h.t.Fatalf("the second run: %v", err)
			}
		}},
		{name: "canceled", meanwhile: func(h *harness, id uuid.UUID, _ *asynq.Task) {
			if _, _, err := h.env.Store.CancelExport(context.Background(), id); err != nil {
				h.t.Fatal(err)
			}
		}},
		{name: "died", died: true, done: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			disk, err := blob.NewDisk(dir + "/blobs")
			if err != nil {
				t.Fatal(err)
			}
			blobs := &orphaningBlobs{Store: disk, died: c.died, held: gate{make(chan struct{}), make(chan struct{})}}
			blobs.failDeletes.Store(true)
			if c.meanwhile == nil {
				close(blobs.held.open)
			}
			h := newHarnessOn(t, map[string]string{"DATA_DIR": dir}, blobs)
			project := h.project()
			for i := range 3 {
				h.readyCopy(project, "photos/wood.jpg", fmt.Sprintf("%02d.jpg", i))
			}
			id, task := h.newExport(project, "web", render.Settings{LongEdge: 320, Quality: 60, IncludeNotReady: true})

			first := make(chan error, 1)
			go func() { first <- h.w.Handler().ProcessTask(context.Background(), task) }()
			await(t, "the first archive to be built", blobs.held.reached)
			if c.meanwhile != nil {
				c.meanwhile(h, id, task)
				close(blobs.held.open)
			}
			select {
			case <-first:
			case <-time.After(5 * time.Minute):
				t.Fatal("timed out waiting for the first run")
			}
			if c.died {
				if err := h.w.Handler().ProcessTask(context.Background(), task); err != nil {
					t.Fatalf("the retry: %v", err)
				}
			}
			var kept []string
			if c.done {
				kept = []string{*h.export(id).BlobKey}
			}
			if files := h.exportArchives(id); len(files) != len(kept)+1 {
				t.Fatalf("stored under the export before the sweep: %v; want the first run's archive left over beside %v", files, kept)
			}

			// As if every run's timeout had passed.
			blobs.failDeletes.Store(false)
			h.exec(`UPDATE blob_discards SET url_expires_at = now() - interval '1 hour'`)
			h.sweep()
			// The parts its runs could not delete go with it.
			if files := h.exportFiles(id); fmt.Sprint(files) != fmt.Sprint(kept) {
				t.Errorf("stored under the export after the sweep: %v, want %v", files, kept)
			}
			if c.done {
				if z := h.archive(id); len(z.File) != 3 {
					t.Errorf("%d entries in the finished export, want 3", len(z.File))
				}
			}
			if n := h.count(`SELECT count(*) FROM blob_discards`); n != 0 {
				t.Errorf("%d discards left after the sweep", n)
			}
		})
	}
}

// orphaningBlobs holds the first archive before it is published until
// held opens and, when died is set, publishes it but reports a failure, as
// a worker that dies right after would never record it. Deletes fail while
// failDeletes is set.
type orphaningBlobs struct {
	blob.Store
	held        gate
	died        bool
	failDeletes atomic.Bool
	archives    atomic.Int32
}

func (s *orphaningBlobs) Create(ctx context.Context, key string) (blob.Writer, error) {
	w, err := s.Store.Create(ctx, key)
	if err != nil || s.archives.Add(1) > 1 {
		return w, err
	}
	return orphanedWriter{w, s}, nil
}

func (s *orphaningBlobs) Delete(ctx context.Context, key string) error {
	if s.failDeletes.Load() {
		return errors.New("the storage refused the delete")
	}
	return s.Store.Delete(ctx, key)
}

type orphanedWriter struct {
	blob.Writer
	s *orphaningBlobs
}

func (w orphanedWriter) Commit() (blob.Info, error) {
	close(w.s.held.reached)
	<-w.s.held.open
	info, err := w.Writer.Commit()
	if err == nil && w.s.died {
		return blob.Info{}, errors.New("the worker died")
	}
	return info, err
}
