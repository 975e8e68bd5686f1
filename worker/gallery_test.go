package worker_test

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"io"
	"testing"

	"github.com/google/uuid"

	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// newGallery records a watermarked gallery of assets as the API does, and
// returns its render jobs by asset.
func (h *harness) newGallery(project uuid.UUID, assets ...uuid.UUID) (uuid.UUID, map[uuid.UUID]store.Job) {
	h.t.Helper()
	g := &store.Gallery{ID: uuid.New(), ProjectID: project, Title: "Harbour wedding", Slug: "g-" + uuid.NewString()[:8], Watermark: true}
	ch, err := h.env.Store.CreateGallery(context.Background(), g, assets, jobs.GallerySpec(project, g.ID))
	if err != nil {
		h.t.Fatal(err)
	}
	if ch.BatchID == nil || len(ch.Jobs) != len(assets) {
		h.t.Fatalf("a watermarked gallery of %d photos recorded %d render jobs (batch %v)", len(assets), len(ch.Jobs), ch.BatchID)
	}
	byAsset := map[uuid.UUID]store.Job{}
	for _, j := range ch.Jobs {
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
	// The share of pixels far from what they were: JPEG re-encoding alone
	// leaves next to none.
	var changed, n int
	b := plain.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			pr, pg, pb, _ := plain.At(x, y).RGBA()
			mr, mg, mb, _ := marked.At(x, y).RGBA()
			if d := int(mr+mg+mb)/3 - int(pr+pg+pb)/3; max(d, -d) > 24*257 {
				changed++
			}
			n++
		}
	}
	share := float64(changed) / float64(n)
	t.Logf("%.1f%% of the pixels changed", 100*share)
	if share < 0.01 {
		t.Errorf("%.2f%% of the watermarked preview's pixels changed; no watermark drawn", 100*share)
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
	h.exec(`UPDATE jobs SET status = 'queued' WHERE id = $1`, renders[ready].ID)
	if err := h.runJob(renders[ready]); err != nil {
		t.Fatalf("render of a photo no longer in the gallery: %v", err)
	}
}
