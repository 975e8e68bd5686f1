package render_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"testing"

	"lightbox/render"
)

// gradient is a w×h JPEG of a soft gradient.
func gradient(t testing.TB, w, h int) []byte {
	src := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			src.Set(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 0x60, 0xff})
		}
	}
	var in bytes.Buffer
	if err := jpeg.Encode(&in, src, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return in.Bytes()
}

// markedBox is the box of the pixels m drew on src: those it changed by
// far more than a JPEG's second encoding does.
func markedBox(t *testing.T, src []byte, m render.Mark) (box image.Rectangle, size image.Rectangle) {
	t.Helper()
	out, err := render.Watermark(src, m, 90)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := jpeg.Decode(bytes.NewReader(src))
	marked, err := jpeg.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if marked.Bounds() != plain.Bounds() {
		t.Fatalf("size %v, want %v", marked.Bounds(), plain.Bounds())
	}
	b := plain.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			pr, pg, pb, _ := plain.At(x, y).RGBA()
			mr, mg, mb, _ := marked.At(x, y).RGBA()
			if d := int(mr+mg+mb)/3 - int(pr+pg+pb)/3; d > 0x1800 || d < -0x1800 {
				box = box.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	return box, b
}

// A mark is drawn once where its gallery asks, not across the photo.
func TestWatermarkIsOneMarkInTheCornerOrTheCenter(t *testing.T) {
	src := gradient(t, 900, 600)
	box, b := markedBox(t, src, render.Mark{Text: "© ana"})
	if box.Empty() || box.Min.X < b.Dx()/2 || box.Min.Y < b.Dy()*3/4 {
		t.Errorf("the corner mark covers %v of %v, want a box in the bottom right", box, b)
	}
	box, b = markedBox(t, src, render.Mark{Text: "© ana", Position: render.MarkCenter, Opacity: 0.6})
	mid := image.Pt(b.Dx()/2, b.Dy()/2)
	if !mid.In(box) || box.Min.X < b.Dx()/20 || box.Max.X > b.Dx()*19/20 || box.Min.Y < b.Dy()/4 || box.Max.Y > b.Dy()*3/4 {
		t.Errorf("the centred mark covers %v of %v, want a box around the middle", box, b)
	}
	// A long text is narrowed to fit.
	box, b = markedBox(t, src, render.Mark{Text: "© Ana Lima Photography, Lisbon and Porto, since 2009"})
	if box.Min.X < b.Dx()/2-b.Dx()/20 {
		t.Errorf("a long corner mark covers %v of %v, more than about half the width", box, b)
	}
	if _, err := render.Watermark([]byte("not a jpeg"), render.Mark{Text: "x"}, 80); err == nil {
		t.Error("a file that is not a JPEG was watermarked")
	}
}

// BenchmarkWatermark marks one preview of the full preview size.
// Baseline: about 90 ms (decode, draw, encode) on two busy cores.
func BenchmarkWatermark(b *testing.B) {
	src := image.NewRGBA(image.Rect(0, 0, 2048, 1536))
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 7)
	}
	var in bytes.Buffer
	if err := jpeg.Encode(&in, src, &jpeg.Options{Quality: 82}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := render.Watermark(in.Bytes(), render.Mark{Text: "© ana"}, 82); err != nil {
			b.Fatal(err)
		}
	}
}
