package render_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/jpeg"
	"maps"
	"slices"
	"strings"
	"testing"

	"lightbox/imaging"
	"lightbox/render"
)

func TestParseEdit(t *testing.T) {
	e, problems := render.ParseEdit(json.RawMessage(`{"exposure": 1.5, "crop": {"x": 0.1, "y": 0.2, "w": 0.5, "h": 0.5}, "rotate": 90}`))
	if len(problems) != 0 || e.Exposure != 1.5 || e.Crop == nil || e.Crop.W != 0.5 || e.Rotate != 90 {
		t.Fatalf("%+v %v", e, problems)
	}
	for raw, field := range map[string]string{
		`{"sharpen": 1}`:       "params.sharpen",
		`{"exposure": 6}`:      "params.exposure",
		`{"contrast": "high"}`: "params.contrast",
		`{"rotate": 45}`:       "params.rotate",
		`{"straighten": -46}`:  "params.straighten",
		`{"crop": {"x": 0.6, "y": 0, "w": 0.5, "h": 1}}`:           "params.crop",
		`{"crop": {"x": -0.1, "y": 0, "w": 0.5, "h": 1}}`:          "params.crop",
		`{"crop": {"x": 0, "y": 0, "w": 0, "h": 1}}`:               "params.crop",
		`{"crop": {"x": 0, "y": 0, "w": 1, "h": 1, "z": 1}}`:       "params.crop",
		`{"crop": {"x": 0, "y": 0, "w": 1, "h": 1, "ratio": 0}}`:   "",
		`{"crop": {"x": 0, "y": 0, "w": 1, "h": 1, "ratio": -1}}`:  "params.crop",
		`{"crop": {"x": 0, "y": 0, "w": 1, "h": 1, "ratio": 101}}`: "params.crop",
		`[1]`: "params",
	} {
		_, problems := render.ParseEdit(json.RawMessage(raw))
		if field == "" && len(problems) != 0 || field != "" && (problems[field] == "" || len(problems) != 1) {
			t.Errorf("%s: problems %v, want one on %q", raw, problems, field)
		}
	}
}

// TestCropRatioHoldsOnEveryShape: a 4:5 crop drawn on a 2:3 portrait, as
// fractions, came out 0.80 there and 0.91 on a 16:10 photo it was synced
// to. With its ratio it is 4:5 on every photo, as wide as its fractions
// say where that fits, centred where they put it.
func TestCropRatioHoldsOnEveryShape(t *testing.T) {
	engine := newEngine(t)
	ctx := context.Background()
	// Drawn on a 2:3 portrait (1000×1500): 800×1000 pixels.
	drawn := render.Crop{X: 0.1, Y: 0.2, W: 0.8, H: 1000.0 / 1500, Ratio: 0.8}
	for _, size := range []image.Point{{1000, 1500}, {1600, 1000}, {1500, 1000}, {3000, 400}} {
		img := image.NewRGBA(image.Rect(0, 0, size.X, size.Y))
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, nil); err != nil {
			t.Fatal(err)
		}
		for _, c := range []render.Crop{drawn, {X: drawn.X, Y: drawn.Y, W: drawn.W, H: drawn.H}} {
			out, err := render.EditedImage(ctx, engine, buf.Bytes(), size, render.Edit{Crop: &c}, max(size.X, size.Y))
			if err != nil {
				t.Fatal(err)
			}
			b := out.Bounds()
			got := float64(b.Dx()) / float64(b.Dy())
			wantW, wantH := c.W*float64(size.X), c.H*float64(size.Y) // free: the fractions
			if c.Ratio > 0 {
				wantW = min(c.W*float64(size.X), float64(size.Y)*c.Ratio)
				wantH = wantW / c.Ratio
			}
			if abs(b.Dx()-int(wantW+0.5)) > 1 || abs(b.Dy()-int(wantH+0.5)) > 1 {
				t.Errorf("ratio %v on %v: %v (%.3f), want %.0f×%.0f", c.Ratio, size, b.Size(), got, wantW, wantH)
			}
		}
	}
}

// meanLuma is the average brightness of a JPEG, 0..255.
func meanLuma(t *testing.T, data []byte) float64 {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	var sum float64
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			sum += (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(bl)) / 257
		}
	}
	return sum / float64(((b.Dy()+3)/4)*((b.Dx()+3)/4))
}

func TestApplyEdit(t *testing.T) {
	engine := newEngine(t)
	kite := readCorpus(t, "photos/kite-2560x1600.jpg") // 2560x1600
	edit := func(raw string) *render.Edited {
		t.Helper()
		e, problems := render.ParseEdit(json.RawMessage(raw))
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		out, err := render.ApplyEdit(context.Background(), engine, kite, image.Pt(2560, 1600), e)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	size := func(o *render.Edited) (image.Point, image.Point) {
		return image.Pt(o.Preview.Width, o.Preview.Height), image.Pt(o.Thumbnail.Width, o.Thumbnail.Height)
	}
	plain := edit(`{}`)
	if p, th := size(plain); p != image.Pt(2048, 1280) || th != image.Pt(320, 200) {
		t.Fatalf("no edit: preview %v thumbnail %v", p, th)
	}
	if p, _ := size(edit(`{"rotate": 90}`)); p != image.Pt(1280, 2048) {
		t.Errorf("rotate 90: %v", p)
	}
	// A quarter of the frame, taken from a source decoded larger: still a
	// full-size preview.
	if p, _ := size(edit(`{"crop": {"x": 0.5, "y": 0.5, "w": 0.5, "h": 0.5}}`)); p != image.Pt(1280, 800) {
		t.Errorf("crop: %v", p)
	}
	if p, _ := size(edit(`{"straighten": 10}`)); p.X < 1200 || abs(p.X*1600-p.Y*2560) > 2560*2 {
		t.Errorf("straighten keeps the shape, not the corners: %v", p)
	}
	base := meanLuma(t, plain.Preview.Data)
	if got := meanLuma(t, edit(`{"exposure": 1}`).Preview.Data); got < base+10 {
		t.Errorf("exposure +1: mean %.1f, was %.1f", got, base)
	}
	if got := meanLuma(t, edit(`{"exposure": -2}`).Preview.Data); got > base-10 {
		t.Errorf("exposure -2: mean %.1f, was %.1f", got, base)
	}
	if !strings.HasPrefix(string(plain.Preview.Data[:2]), "\xff\xd8") {
		t.Error("the preview is not a JPEG")
	}
}

// sizeSpy records the size each render of the engine asks for.
type sizeSpy struct {
	imaging.Engine
	asked []image.Point
}

func (s *sizeSpy) Render(ctx context.Context, data []byte, opt imaging.RenderOptions) ([]byte, error) {
	s.asked = append(s.asked, image.Pt(opt.Width, opt.Height))
	return s.Engine.Render(ctx, data, opt)
}

// A crop of a sliver of a pixel asks for the largest source an edit ever
// decodes, not for a size that overflowed past the int range (negative: the
// whole original, whatever its size).
func TestApplyEditClampsTheSourceOfATinyCrop(t *testing.T) {
	kite := readCorpus(t, "photos/kite-2560x1600.jpg")
	for _, e := range []render.Edit{
		{Crop: &render.Crop{W: 1e-17, H: 1}},
		{Crop: &render.Crop{X: 0.5, Y: 0.5, W: 1e-300, H: 1e-300}, Straighten: 45},
		{Crop: &render.Crop{W: 1e-3, H: 1}, Straighten: -1},
	} {
		spy := &sizeSpy{Engine: newEngine(t)}
		out, err := render.ApplyEdit(context.Background(), spy, kite, image.Pt(2560, 1600), e)
		if err != nil {
			t.Fatalf("crop %+v: %v", *e.Crop, err)
		}
		if want := []image.Point{image.Pt(8192, 8192)}; !slices.Equal(spy.asked, want) {
			t.Errorf("crop %+v straighten %v: the source asked for is %v, want %v", *e.Crop, e.Straighten, spy.asked, want)
		}
		if out.Preview.Width < 1 || out.Preview.Height < 1 {
			t.Errorf("crop %+v: preview %dx%d", *e.Crop, out.Preview.Width, out.Preview.Height)
		}
	}
}

func TestCheckCropPixels(t *testing.T) {
	crop := func(w, h float64) render.Edit { return render.Edit{Crop: &render.Crop{W: w, H: h}} }
	for _, c := range []struct {
		e    render.Edit
		want []string
	}{
		{crop(1e-17, 1), []string{"params.crop.w"}},
		{crop(1, 0.5/1600), []string{"params.crop.h"}},
		{crop(0.1/2560, 0.1/1600), []string{"params.crop.h", "params.crop.w"}},
		{crop(1.0/2560, 1.0/1600), nil}, // one pixel each way
		{render.Edit{}, nil},
	} {
		got := slices.Sorted(maps.Keys(render.CheckCropPixels(c.e, 2560, 1600)))
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v on 2560x1600: problems on %v, want %v", c.e.Crop, got, c.want)
		}
	}
}
