package render_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"testing"

	"lightbox/render"
)

func TestWatermarkKeepsTheSizeAndMarksEveryBand(t *testing.T) {
	const w, h = 900, 600
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
	out, err := render.Watermark(in.Bytes(), "© ana", 90)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := jpeg.Decode(bytes.NewReader(in.Bytes()))
	marked, err := jpeg.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if marked.Bounds() != plain.Bounds() {
		t.Fatalf("size %v, want %v", marked.Bounds(), plain.Bounds())
	}
	// Every horizontal third holds brighter pixels than the plain image:
	// the text runs from top to bottom.
	for band := range 3 {
		changed := 0
		for y := band * h / 3; y < (band+1)*h/3; y++ {
			for x := range w {
				pr, pg, pb, _ := plain.At(x, y).RGBA()
				mr, mg, mb, _ := marked.At(x, y).RGBA()
				if (mr+mg+mb)/3 > (pr+pg+pb)/3+0x1800 {
					changed++
				}
			}
		}
		if changed < w*h/3/100 {
			t.Errorf("band %d: %d pixels brightened, want at least 1%%", band, changed)
		}
	}
	if _, err := render.Watermark([]byte("not a jpeg"), "x", 80); err == nil {
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
		if _, err := render.Watermark(in.Bytes(), "© ana", 82); err != nil {
			b.Fatal(err)
		}
	}
}
