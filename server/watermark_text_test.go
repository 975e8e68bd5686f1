package server_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/imaging"
	"lightbox/render"
)

// A watermarked gallery's previews, which anyone with the link sees, show
// the gallery's title or the text its owner sets, never the name part of
// the owner's address. What was drawn is read back by drawing the same
// preview with each candidate text: the drawing is deterministic.
func TestWatermarkShowsTheGalleryNotTheOwnersAddress(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.startWorker()
	key := a.user("ana.lima@example.org", false)
	project := a.newProject(key)
	photo := a.readyPhotos(key, project, "photos/wood.jpg")[0]
	g := a.newGallery(key, project, map[string]any{"title": "Harbour wedding", "watermark": true, "assetIds": []string{photo}})
	id := g["id"].(string)
	if g["watermarkText"] != nil {
		t.Fatalf("watermarkText %v, want null (the title)", g["watermarkText"])
	}
	read := func(k string) []byte {
		t.Helper()
		f, _, err := a.blobs.Open(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	plain := read(blob.DerivedKey(uuid.MustParse(photo), blob.KindPreview))
	drawnWith := func(text string) []byte {
		t.Helper()
		b, err := render.Watermark(plain, render.Mark{Text: text}, imaging.DefaultPreviewQuality)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	shown := func() []byte {
		t.Helper()
		var k string
		if err := a.env.DB.Get(&k, `SELECT watermark_key FROM gallery_assets WHERE gallery_id = $1`, id); err != nil {
			t.Fatal(err)
		}
		return read(k)
	}
	check := func(want string) {
		t.Helper()
		got := shown()
		if bytes.Equal(got, drawnWith("© ana.lima")) {
			t.Fatal("the preview shows the name part of the owner's address, © ana.lima")
		}
		if !bytes.Equal(got, drawnWith(want)) {
			t.Fatalf("the preview does not show %q", want)
		}
	}
	a.waitBatch(key, g["renderBatchId"].(string), "completed")
	check("Harbour wedding")

	// The owner names the studio: every preview is drawn again.
	mark := "© Ana Lima Photography"
	r := a.do("PATCH", "/v1/galleries/"+id, key, map[string]any{"watermarkText": mark})
	expect(t, r, 200, "")
	p := r.json(t)
	batch, _ := p["renderBatchId"].(string)
	if p["watermarkText"] != mark || batch == "" {
		t.Fatalf("a new watermark text: %s", r.body)
	}
	a.waitBatch(key, batch, "completed")
	check(mark)
	if s := a.share(g["shareSlug"].(string), ""); len(s.Assets) != 1 || s.Assets[0].Pending {
		t.Fatalf("the gallery after it was drawn again: %+v", s.Assets)
	}
	for _, bad := range []any{"", "  ", strings.Repeat("x", 101), "two\nlines", 7} {
		expect(t, a.do("PATCH", "/v1/galleries/"+id, key, map[string]any{"watermarkText": bad}), 400, "validation_failed")
	}
}
