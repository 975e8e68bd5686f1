package server_test

import (
	"testing"

	"lightbox/ptr"
)

// TestGalleriesShowEachPhotosNewestEdit: a client's gallery shows a photo
// as its newest edit left it, with or without a watermark, and an edit
// made after the watermarked preview was drawn draws it again. Galleries
// showed the unedited previews before.
func TestGalleriesShowEachPhotosNewestEdit(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.startWorker()
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	kite := a.readyPhotos(key, project, "photos/kite-2560x1600.jpg")[0]
	plain := a.newGallery(key, project, map[string]any{"title": "Plain", "assetIds": []string{kite}})
	marked := a.newGallery(key, project, map[string]any{"title": "Proofs", "watermark": true, "assetIds": []string{kite}})
	a.waitBatch(key, marked["renderBatchId"].(string), "completed")
	shown := func(g map[string]any) (w, h int) {
		t.Helper()
		s := a.share(g["shareSlug"].(string), "")
		if len(s.Assets) != 1 || s.Assets[0].Pending {
			t.Fatalf("gallery %v shows %+v", g["title"], s.Assets)
		}
		b := a.image(*s.Assets[0].PreviewURL).Bounds()
		// The size the answer gives is the one shown, for the page's layout.
		if got := s.Assets[0]; got.Width == nil || got.Height == nil || *got.Width != b.Dx() || *got.Height != b.Dy() {
			t.Errorf("gallery %v says %d×%d, shows %v", g["title"], ptr.Value(got.Width), ptr.Value(got.Height), b.Size())
		}
		return b.Dx(), b.Dy()
	}
	if w, h := shown(marked); w != 2048 || h != 1280 {
		t.Fatalf("the watermarked preview before the edit: %dx%d", w, h)
	}

	// The left half, 4:5 at its full height: 1280×1600 of the photo.
	edit := func(params map[string]any) {
		t.Helper()
		r := a.do("POST", "/v1/assets/"+kite+"/edits", key, map[string]any{"name": "Tight", "params": params})
		expect(t, r, 201, "")
		waitCount(t, a, "the edit rendered", 1, `SELECT count(*) FROM jobs WHERE id = $1 AND status = 'done'`, decode[editReply](t, r).JobID)
	}
	edit(map[string]any{"crop": map[string]any{"x": 0, "y": 0, "w": 0.5, "h": 1, "ratio": 0.8}})
	if w, h := shown(plain); w*5 != h*4 {
		t.Errorf("the plain gallery shows %dx%d, want the edit's 4:5", w, h)
	}
	waitCount(t, a, "the watermarked preview drawn again", 1,
		`SELECT count(*) FROM gallery_assets WHERE gallery_id = $1 AND watermark_key IS NOT NULL`, marked["id"])
	if w, h := shown(marked); w*5 != h*4 {
		t.Errorf("the watermarked gallery shows %dx%d, want the edit's 4:5", w, h)
	}

	// A newer edit, turned a quarter: drawn again once more.
	edit(map[string]any{"crop": map[string]any{"x": 0, "y": 0, "w": 0.5, "h": 1, "ratio": 0.8}, "rotate": 90})
	waitCount(t, a, "the watermarked preview drawn again", 1,
		`SELECT count(*) FROM gallery_assets WHERE gallery_id = $1 AND watermark_key IS NOT NULL`, marked["id"])
	if w, h := shown(marked); w*4 != h*5 {
		t.Errorf("the watermarked gallery shows %dx%d, want the newer edit's 5:4", w, h)
	}
}
