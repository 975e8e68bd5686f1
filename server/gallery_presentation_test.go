package server_test

import (
	"context"
	"image"
	"image/jpeg"
	"testing"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/ptr"
)

// markedShare is the share of the pixels of r where marked differs from
// plain by more than a JPEG's second encoding does: the watermark's.
func markedShare(plain, marked image.Image, r image.Rectangle) float64 {
	var changed, n int
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			pr, pg, pb, _ := plain.At(x, y).RGBA()
			mr, mg, mb, _ := marked.At(x, y).RGBA()
			if d := int(mr+mg+mb)/3 - int(pr+pg+pb)/3; max(d, -d) > 12*0x101 {
				changed++
			}
			n++
		}
	}
	return float64(changed) / float64(n)
}

// A watermarked gallery's previews carry one light mark, in the bottom
// right corner unless the owner asks for the center, and the rest of the
// photo is the photo: a client sees what they choose. Moving the mark or
// changing its opacity draws every preview again.
func TestGalleryWatermarkIsOneLightMark(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.startWorker()
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	photo := a.readyPhotos(key, project, "photos/kite-2560x1600.jpg")[0]
	g := a.newGallery(key, project, map[string]any{"title": "Harbour wedding", "watermark": true, "assetIds": []string{photo}})
	if g["watermarkPosition"] != "corner" || g["watermarkOpacity"] != 0.3 || g["showFileNames"] != false {
		t.Fatalf("a new gallery's watermark: %v at %v, file names %v; want the corner at 0.3, no names",
			g["watermarkPosition"], g["watermarkOpacity"], g["showFileNames"])
	}
	f, _, err := a.blobs.Open(context.Background(), blob.DerivedKey(uuid.MustParse(photo), blob.KindPreview))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := jpeg.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	b := plain.Bounds()
	w, h := b.Dx(), b.Dy()
	// Regions of the preview: the mark's, and the rest.
	corner := image.Rect(w/2, h*3/4, w, h)
	middle := image.Rect(w/8, h*3/8, w*7/8, h*5/8)
	awayFromCorner := []image.Rectangle{image.Rect(0, 0, w, h*2/3), image.Rect(0, 0, w/2, h)}
	awayFromMiddle := []image.Rectangle{image.Rect(0, 0, w, h/4), image.Rect(0, h*3/4, w, h)}
	shown := func(batch any) image.Image {
		t.Helper()
		a.waitBatch(key, batch.(string), "completed")
		s := a.share(g["shareSlug"].(string), "")
		if len(s.Assets) != 1 || s.Assets[0].Pending {
			t.Fatalf("the gallery shows %+v", s.Assets)
		}
		return a.image(*s.Assets[0].PreviewURL)
	}
	check := func(what string, marked image.Image, at image.Rectangle, away []image.Rectangle) float64 {
		t.Helper()
		if marked.Bounds() != b {
			t.Fatalf("%s: the watermarked preview is %v, the preview %v", what, marked.Bounds(), b)
		}
		in := markedShare(plain, marked, at)
		t.Logf("%s: %.2f%% of the pixels changed where the mark is", what, 100*in)
		if in < 0.01 {
			t.Errorf("%s: %.2f%% of the pixels of %v changed; want a mark there", what, 100*in, at)
		}
		for _, r := range away {
			out := markedShare(plain, marked, r)
			t.Logf("%s: %.3f%% changed in %v", what, 100*out, r)
			if out > 0.001 {
				t.Errorf("%s: %.3f%% of the pixels of %v changed, away from the mark; want the photo as it is", what, 100*out, r)
			}
		}
		return in
	}
	check("in the corner", shown(g["renderBatchId"]), corner, awayFromCorner)

	id := g["id"].(string)
	patch := func(body map[string]any) map[string]any {
		t.Helper()
		r := a.do("PATCH", "/v1/galleries/"+id, key, body)
		expect(t, r, 200, "")
		p := r.json(t)
		if p["renderBatchId"] == nil {
			t.Fatalf("%v started no render: %s", body, r.body)
		}
		return p
	}
	p := patch(map[string]any{"watermarkPosition": "center"})
	if p["watermarkPosition"] != "center" {
		t.Fatalf("watermarkPosition %v after the patch", p["watermarkPosition"])
	}
	light := check("in the middle", shown(p["renderBatchId"]), middle, awayFromMiddle)
	p = patch(map[string]any{"watermarkOpacity": 0.9})
	if p["watermarkOpacity"] != 0.9 {
		t.Fatalf("watermarkOpacity %v after the patch", p["watermarkOpacity"])
	}
	if strong := check("in the middle at 0.9", shown(p["renderBatchId"]), middle, awayFromMiddle); strong <= light {
		t.Errorf("at 0.9 %.2f%% of the middle changed, at 0.3 %.2f%%: want more", 100*strong, 100*light)
	}

	// Stable codes for what is not a position or an opacity, on both routes.
	for field, bad := range map[string][]any{
		"watermarkPosition": {"centre", "top", "", 3, nil},
		"watermarkOpacity":  {0, 0.04, 1.01, -1, "0.3", nil},
	} {
		for _, v := range bad {
			expectField(t, field, a.do("PATCH", "/v1/galleries/"+id, key, map[string]any{field: v}), field, "")
			if v != nil {
				expectField(t, field, a.do("POST", "/v1/projects/"+project+"/galleries", key,
					map[string]any{"title": "T", field: v}), field, "")
			}
		}
	}
	expectField(t, "showFileNames", a.do("PATCH", "/v1/galleries/"+id, key, map[string]any{"showFileNames": nil}), "showFileNames", "")
}

// A gallery shows its photos' file names when its owner allows, and each
// photo's size, so the page lays them out in their own shape at once.
func TestGalleryShowsFileNamesWhenAllowed(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.startWorker()
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	photos := a.readyPhotos(key, project, "photos/wood.jpg", "photos/kite-2560x1600.jpg")
	g := a.newGallery(key, project, map[string]any{"title": "Proofs", "assetIds": photos})
	slug := g["shareSlug"].(string)
	s := a.share(slug, "")
	if s.ShowFileNames || len(s.Assets) != 2 {
		t.Fatalf("a new gallery's answer: %+v", s)
	}
	for _, p := range s.Assets {
		if p.FileName != nil {
			t.Errorf("the file name %q is shown without the owner's leave", *p.FileName)
		}
		img := a.image(*p.PreviewURL).Bounds()
		if p.Width == nil || p.Height == nil || *p.Width != img.Dx() || *p.Height != img.Dy() {
			t.Errorf("%s is said to be %d×%d, its preview is %v", p.AssetID, ptr.Value(p.Width), ptr.Value(p.Height), img.Size())
		}
	}
	r := a.do("PATCH", "/v1/galleries/"+g["id"].(string), key, map[string]any{"showFileNames": true})
	expect(t, r, 200, "")
	if p := r.json(t); p["showFileNames"] != true || p["renderBatchId"] != nil {
		t.Fatalf("file names on: %s", r.body)
	}
	s = a.share(slug, "")
	if !s.ShowFileNames || s.Assets[0].FileName == nil || *s.Assets[0].FileName != "wood.jpg" ||
		s.Assets[1].FileName == nil || *s.Assets[1].FileName != "kite-2560x1600.jpg" {
		t.Fatalf("with file names: %+v", s)
	}
}
