package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/jpeg"
	"testing"

	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/render"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// portrait is a 1000×1500 (2:3) JPEG of a soft gradient.
func portrait(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 1000, 1500))
	for y := range 1500 {
		for x := range 1000 {
			i := img.PixOffset(x, y)
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = byte(x/8), byte(y/8), 96, 255
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// meanLuma is the average brightness of an image, 0..255.
func meanLuma(img image.Image) float64 {
	b := img.Bounds()
	var sum float64
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			sum += (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(bl)) / 257
			n++
		}
	}
	return sum / float64(n)
}

// TestExportsDrawEachPhotosNewestEdit: a 4:5 crop and +1 EV, drawn on a
// 2:3 portrait and synced to a 16:10 and a 3:2 photo, are in every export
// of them: each photo 4:5 and brighter than as shot, rendered from its
// original at the preset's size; full_res holds the edited photo as a
// full-size JPEG, and the original's own bytes without includeEdits or
// for a photo with no edit. Exports read only previews and originals
// before, so a client's zip held the unedited photos.
func TestExportsDrawEachPhotosNewestEdit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	project := h.project()
	tall, _ := h.finalizeWithoutEnqueue(project, portrait(t))
	h.env.SetAssets(t, testenv.AssetRow{Filename: "tall.jpg"}, "id = $1", tall)
	h.ingested(project, tall)
	kite := h.ready(project, "photos/kite-2560x1600.jpg")
	storm := h.ready(project, "photos/storm.jpg")
	plain := h.ready(project, "photos/wood.jpg")
	edited := []uuid.UUID{tall, kite, storm}

	// 800×1000 pixels of the portrait, as the app draws it at 4:5.
	params := `{"exposure": 1, "crop": {"x": 0.1, "y": 0.1, "w": 0.8, "h": 0.666667, "ratio": 0.8}}`
	targets := make([]store.EditTarget, len(edited))
	for i, a := range edited {
		targets[i] = store.EditTarget{AssetID: a, Params: json.RawMessage(params)}
	}
	h.env.Tx(t, func(tx *store.Store) error {
		_, _, err := app.RecordEdits(ctx, tx, h.owner, project, targets)
		return err
	})

	export := func(preset string, s render.Settings) map[string][]byte {
		t.Helper()
		id, task := h.newExport(project, preset, s, append(edited, plain)...)
		if err := h.runExport(ctx, task); err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, f := range h.archive(id).File {
			data, _ := entry(t, f)
			out[f.Name] = data
		}
		return out
	}
	decode := func(name string, data []byte) image.Image {
		t.Helper()
		img, _, err := image.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return img
	}
	asShot := export("web", render.Settings{LongEdge: 1024, Quality: 90, IncludeNotReady: true})
	web := export("web", render.Settings{LongEdge: 1024, Quality: 90, IncludeNotReady: true, IncludeEdits: true})
	for _, name := range []string{"tall.jpg", "kite-2560x1600.jpg", "storm.jpg"} {
		img, before := decode(name, web[name]), decode(name, asShot[name])
		b := img.Bounds()
		// 4:5 to within a pixel, as large as the box and the photo allow:
		// 1024 high where its crop holds that many pixels.
		if abs(b.Dx()*5-b.Dy()*4) > 5 || name != "tall.jpg" && b.Dy() != 1024 {
			t.Errorf("%s edited: %v, want 4:5 and 1024 high", name, b.Size())
		}
		if meanLuma(img) < meanLuma(before)+15 {
			t.Errorf("%s: mean brightness %.0f edited, %.0f as shot; want +1 EV to show", name, meanLuma(img), meanLuma(before))
		}
	}
	if !bytes.Equal(web["wood.jpg"], asShot["wood.jpg"]) {
		t.Error("the photo with no edit was drawn otherwise with edits on")
	}

	social := export("instagram_carousel", render.Settings{Width: 1080, Height: 1350, Quality: 90, IncludeNotReady: true, IncludeEdits: true})
	if b := decode("kite", social["kite-2560x1600.jpg"]).Bounds(); abs(b.Dx()*5-b.Dy()*4) > 5 {
		t.Errorf("the edited kite as instagram_carousel: %v, want 4:5", b.Size())
	}

	full := export("full_res", render.Settings{IncludeNotReady: true, IncludeEdits: true})
	// The kite's crop is as wide as 80 % of 2560 would make it, but no
	// taller than the photo: 1280×1600.
	if b := decode("kite", full["kite-2560x1600.jpg"]).Bounds(); abs(b.Dx()-1280) > 1 || abs(b.Dy()-1600) > 1 {
		t.Errorf("the edited kite in full_res: %v, want 1280×1600", b.Size())
	}
	if b := decode("tall", full["tall.jpg"]).Bounds(); abs(b.Dx()-800) > 1 || abs(b.Dy()-1000) > 1 {
		t.Errorf("the edited portrait in full_res: %v, want 800×1000", b.Size())
	}
	if !bytes.Equal(full["wood.jpg"], readCorpus(t, "photos/wood.jpg")) {
		t.Error("full_res did not copy the original of the photo with no edit")
	}
	originals := export("full_res", render.Settings{IncludeNotReady: true})
	if !bytes.Equal(originals["kite-2560x1600.jpg"], readCorpus(t, "photos/kite-2560x1600.jpg")) {
		t.Error("full_res without includeEdits did not copy the edited photo's original")
	}
}
