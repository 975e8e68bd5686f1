package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/blob"
	"lightbox/imaging"
	"lightbox/render"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// changeGallery changes a gallery as the API does, and returns the
// render jobs the change recorded.
func (h *harness) changeGallery(change func(tx *store.Store) (*store.GalleryChange, error)) (*store.GalleryChange, []store.Job, error) {
	h.t.Helper()
	ch, err := app.ChangeGallery(context.Background(), h.env.Store, change)
	if err != nil || ch.BatchID == nil {
		return ch, nil, err
	}
	renders, err := h.env.Store.BatchJobs(context.Background(), *ch.BatchID)
	return ch, renders, err
}

// newGallery records a watermarked gallery of assets as the API does, and
// returns its render jobs by asset.
func (h *harness) newGallery(project uuid.UUID, assets ...uuid.UUID) (uuid.UUID, map[uuid.UUID]store.Job) {
	h.t.Helper()
	g := &store.Gallery{ID: uuid.New(), ProjectID: project, Title: "Harbour wedding", Slug: "g-" + uuid.NewString()[:8], Watermark: true}
	ch, renders, err := h.changeGallery(func(tx *store.Store) (*store.GalleryChange, error) {
		return tx.CreateGallery(context.Background(), g, assets)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	if ch.BatchID == nil || len(renders) != len(assets) {
		h.t.Fatalf("a watermarked gallery of %d photos recorded %d render jobs (batch %v)", len(assets), len(renders), ch.BatchID)
	}
	byAsset := map[uuid.UUID]store.Job{}
	for _, j := range renders {
		if j.TaskID != "gallery:"+g.ID.String()+":"+j.AssetID.String() || j.Queue != tasks.QueueDefault {
			h.t.Fatalf("render job %s on %s", j.TaskID, j.Queue)
		}
		byAsset[*j.AssetID] = j
	}
	return g.ID, byAsset
}

func (h *harness) runJob(j store.Job) error {
	return h.w.Handler().ProcessTask(context.Background(), tasks.New(j.Type, j.Payload, j.TaskID))
}

func (h *harness) jpegAt(key string) image.Image {
	h.t.Helper()
	f, _, err := h.blobs.Open(context.Background(), key)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	data, _ := io.ReadAll(f)
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		h.t.Fatalf("%s is not a JPEG: %v", key, err)
	}
	return img
}

func TestGalleryRenderWatermarksThePreview(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	ready := h.ready(project, "photos/wood.jpg")
	waiting := h.notReady(project, "photos/dune.jpg")
	gallery, renders := h.newGallery(project, ready, waiting)

	if err := h.runJob(renders[ready]); err != nil {
		t.Fatalf("render: %v", err)
	}
	var key string
	if err := h.env.DB.Get(&key, `SELECT watermark_key FROM gallery_assets WHERE gallery_id = $1 AND asset_id = $2`,
		gallery, ready); err != nil {
		t.Fatalf("no watermarked preview recorded: %v", err)
	}
	plain, marked := h.derived(ready, "preview"), h.jpegAt(key)
	if marked.Bounds() != plain.Bounds() {
		t.Fatalf("watermarked preview %v, plain %v: the size changed", marked.Bounds(), plain.Bounds())
	}
	// The pixels far from what they were: JPEG re-encoding alone leaves
	// next to none, and the mark is one, in the bottom right corner.
	var corner, elsewhere int
	b := plain.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			pr, pg, pb, _ := plain.At(x, y).RGBA()
			mr, mg, mb, _ := marked.At(x, y).RGBA()
			switch d := int(mr+mg+mb)/3 - int(pr+pg+pb)/3; {
			case max(d, -d) <= 24*257:
			case x > b.Dx()/2 && y > b.Dy()*3/4:
				corner++
			default:
				elsewhere++
			}
		}
	}
	t.Logf("%d pixels changed in the bottom right corner, %d elsewhere", corner, elsewhere)
	if corner < 100 || elsewhere > corner/100 {
		t.Errorf("%d pixels changed in the bottom right corner and %d elsewhere; want one mark in the corner", corner, elsewhere)
	}
	if n := h.count(`SELECT count(*) FROM jobs WHERE id = $1 AND status = 'done'`, renders[ready].ID); n != 1 {
		t.Error("the render job is not recorded done")
	}

	// A photo whose preview is not made yet waits through the retries.
	if err := h.runJob(renders[waiting]); err == nil {
		t.Fatal("a photo without a preview rendered")
	}
	if n := h.count(`SELECT count(*) FROM gallery_assets WHERE asset_id = $1 AND watermark_key IS NULL`, waiting); n != 1 {
		t.Fatal("a watermarked preview was recorded for a photo without a preview")
	}
	// Once ingest made it, the retry renders it.
	h.ingested(project, waiting)
	if err := h.runJob(renders[waiting]); err != nil {
		t.Fatalf("render after ingest: %v", err)
	}
	if n := h.count(`SELECT count(*) FROM gallery_assets WHERE gallery_id = $1 AND watermark_key IS NOT NULL`, gallery); n != 2 {
		t.Fatalf("%d of 2 photos have watermarked previews", n)
	}

	// A photo taken out of the gallery needs nothing.
	if _, err := h.env.Store.RemoveGalleryAssets(context.Background(), gallery, []uuid.UUID{ready}); err != nil {
		t.Fatal(err)
	}
	h.env.SetJobs(t, testenv.JobRow{Status: store.JobQueued}, "id = $1", renders[ready].ID)
	if err := h.runJob(renders[ready]); err != nil {
		t.Fatalf("render of a photo no longer in the gallery: %v", err)
	}
}

// TestGalleryRenderNoRowKeepsIsSwept writes a photo's watermarked preview
// that no row comes to name, each way a render can leave one: the photo
// was taken out of the gallery or deleted while the file was written, and
// the render's own delete of it failed, or the worker died between the
// write and recording it. Once the render's timeout has passed, the sweep
// deletes it and keeps the previews rows name, including one the photo
// got when it was added back.
func TestGalleryRenderNoRowKeepsIsSwept(t *testing.T) {
	t.Parallel()
	remove := func(h *harness, gallery, asset uuid.UUID) {
		if _, err := h.env.Store.RemoveGalleryAssets(context.Background(), gallery, []uuid.UUID{asset}); err != nil {
			h.t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		died bool // the write is stored, then the render dies
		// gone takes the photo out while its render is held (or after it died).
		gone    func(h *harness, gallery, asset uuid.UUID)
		readded bool
	}{
		{name: "removed", gone: remove, readded: true},
		{name: "deleted", gone: func(h *harness, _, asset uuid.UUID) {
			// The asset:delete job is not needed here: its keys are discards.
			if _, err := h.env.Store.DeleteAsset(context.Background(), h.owner, asset, nil, time.Now()); err != nil {
				h.t.Fatal(err)
			}
		}},
		{name: "died", died: true, gone: remove, readded: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			disk, err := blob.NewDisk(dir + "/blobs")
			if err != nil {
				t.Fatal(err)
			}
			blobs := &losingBlobs{Store: disk, died: c.died}
			if !c.died {
				blobs.held = gate{make(chan struct{}), make(chan struct{})}
			}
			blobs.failDeletes.Store(true)
			h := newHarnessOn(t, map[string]string{"DATA_DIR": dir}, blobs)
			project := h.project()
			// Which files the sweep keeps is the point, not their pixels:
			// small photos spare three ingests and renders of large ones.
			kept, gone := h.ready(project, "odd/progressive.jpg"), h.ready(project, "odd/grayscale.jpg")
			blobs.asset = gone.String()
			gallery, renders := h.newGallery(project, kept, gone)
			if err := h.runJob(renders[kept]); err != nil {
				t.Fatal(err)
			}

			if c.died {
				if err := h.runJob(renders[gone]); err == nil {
					t.Fatal("the render that died succeeded")
				}
				c.gone(h, gallery, gone)
				if err := h.runJob(renders[gone]); err != nil {
					t.Fatalf("the retry of a photo taken out: %v", err)
				}
			} else {
				ended := make(chan error, 1)
				go func() { ended <- h.runJob(renders[gone]) }()
				await(t, "the render's write", blobs.held.reached)
				c.gone(h, gallery, gone)
				close(blobs.held.open)
				select {
				case <-ended:
				case <-time.After(5 * time.Minute):
					t.Fatal("timed out waiting for the render")
				}
			}
			if files := h.galleryFiles(gallery); len(files) != 2 {
				t.Fatalf("stored under the gallery: %v; want the photo's left over beside the other's", files)
			}

			sweep := func() {
				t.Helper()
				// As if every render's timeout had passed.
				h.exec(`UPDATE blob_discards SET url_expires_at = now() - interval '1 hour'`)
				h.sweep()
				var named []string
				if err := h.env.DB.Select(&named, `SELECT watermark_key FROM gallery_assets
					WHERE gallery_id = $1 AND watermark_key IS NOT NULL ORDER BY watermark_key COLLATE "C"`, gallery); err != nil {
					t.Fatal(err)
				}
				if files := h.galleryFiles(gallery); fmt.Sprint(files) != fmt.Sprint(named) {
					t.Errorf("stored under the gallery after the sweep: %v, want what its rows name: %v", files, named)
				}
				for _, k := range named {
					h.jpegAt(k)
				}
			}
			blobs.failDeletes.Store(false)
			sweep()
			if c.readded {
				ch, renders, err := h.changeGallery(func(tx *store.Store) (*store.GalleryChange, error) {
					return tx.AddGalleryAssets(context.Background(), gallery, []uuid.UUID{gone})
				})
				if err != nil || len(renders) != 1 {
					t.Fatalf("adding the photo back: %+v %v", ch, err)
				}
				if err := h.runJob(renders[0]); err != nil {
					t.Fatalf("the render of the photo added back: %v", err)
				}
				if n := h.count(`SELECT count(*) FROM gallery_assets WHERE gallery_id = $1 AND watermark_key IS NOT NULL`, gallery); n != 2 {
					t.Fatalf("%d of 2 photos have watermarked previews", n)
				}
				sweep()
			}
		})
	}
}

// losingBlobs loses the watermarked preview of one asset: its first write
// is held until held opens, or, when died is set, stored but reported
// failed, as a worker that dies right after would never record it.
// Deletes fail while failDeletes is set.
type losingBlobs struct {
	blob.Store
	asset       string
	held        gate
	died        bool
	once        sync.Once
	failDeletes atomic.Bool
}

func (s *losingBlobs) Put(ctx context.Context, key string, r io.Reader, limit int64) (blob.Info, error) {
	first := false
	if strings.HasPrefix(key, "galleries/") && strings.Contains(key, s.asset) {
		s.once.Do(func() { first = true })
	}
	if !first {
		return s.Store.Put(ctx, key, r, limit)
	}
	if s.held.reached != nil {
		close(s.held.reached)
		<-s.held.open
	}
	info, err := s.Store.Put(context.WithoutCancel(ctx), key, r, limit)
	if err == nil && s.died {
		return blob.Info{}, errors.New("the worker died")
	}
	return info, err
}

func (s *losingBlobs) Delete(ctx context.Context, key string) error {
	if s.failDeletes.Load() {
		return errors.New("the storage refused the delete")
	}
	return s.Store.Delete(ctx, key)
}

// galleryFiles lists the files stored under a gallery's folder.
func (h *harness) galleryFiles(gallery uuid.UUID) []string {
	h.t.Helper()
	var out []string
	root := h.cfg.DataDir + "/blobs"
	filepath.WalkDir(root+"/galleries/"+gallery.String(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// A render that drew the gallery's text while its owner changed it is not
// recorded: its file is deleted and its retry draws the new text.
func TestGalleryRenderOfAnOldTextIsDrawnAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	disk, err := blob.NewDisk(dir + "/blobs")
	if err != nil {
		t.Fatal(err)
	}
	blobs := &losingBlobs{Store: disk, held: gate{make(chan struct{}), make(chan struct{})}}
	h := newHarnessOn(t, map[string]string{"DATA_DIR": dir}, blobs)
	project := h.project()
	photo := h.ready(project, "photos/wood.jpg")
	blobs.asset = photo.String()
	gallery, renders := h.newGallery(project, photo)

	ended := make(chan error, 1)
	go func() { ended <- h.runJob(renders[photo]) }()
	await(t, "the render's write", blobs.held.reached)
	mark := "© Ana Lima Photography"
	pm := &mark
	ch, again, err := h.changeGallery(func(tx *store.Store) (*store.GalleryChange, error) {
		return tx.UpdateGallery(context.Background(), h.owner, gallery, store.GalleryInput{WatermarkText: &pm})
	})
	if err != nil || len(again) != 0 {
		t.Fatalf("a new text while the photo's render runs: %+v, %v; want no second job", ch, err)
	}
	close(blobs.held.open)
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the render of the old text was recorded")
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("timed out waiting for the render")
	}
	if files := h.galleryFiles(gallery); len(files) != 0 {
		t.Fatalf("stored under the gallery: %v; want nothing", files)
	}

	if err := h.runJob(renders[photo]); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	var key string
	if err := h.env.DB.Get(&key, `SELECT watermark_key FROM gallery_assets WHERE gallery_id = $1`, gallery); err != nil {
		t.Fatal(err)
	}
	read := func(k string) []byte {
		f, _, err := h.blobs.Open(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		return b
	}
	want, err := render.Watermark(read(blob.DerivedKey(photo, blob.KindPreview)), render.Mark{Text: mark}, imaging.DefaultPreviewQuality)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(key), want) {
		t.Fatalf("the retry's preview is not drawn with %q", mark)
	}
}
