package imaging

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"testing"
)

// TestThumbnailLooksLikeProcesssThumbnail holds the fast thumbnail to the
// one Process makes from the preview: the same size and orientation, the
// same picture within JPEG noise, and the same refusals, on the ways each
// format is read (a large JPEG scaled in the DCT, a progressive one, a
// turned one, CMYK, WebP with alpha, HEIC, AVIF, JPEG XL, a raw's
// embedded JPEG).
func TestThumbnailLooksLikeProcesssThumbnail(t *testing.T) {
	files := []struct {
		name string
		data func(testing.TB) []byte
		// camera: a raw whose embedded JPEG covers the thumbnail but not
		// the preview, which LibRaw develops: the two are different
		// renderings (ingest replaces the thumbnail with its own).
		camera bool
	}{
		{"kleiber", func(t testing.TB) []byte { return readCorpus(t, "photos/kleiber-6028x3391.jpg") }, false},
		{"progressive", func(t testing.TB) []byte { return readCorpus(t, "photos/elephants-3840x2160-progressive.jpg") }, false},
		{"orientation-6", func(t testing.TB) []byte { return readCorpus(t, "odd/orientation-6.jpg") }, false},
		{"cmyk", func(t testing.TB) []byte { return readCorpus(t, "odd/cmyk.jpg") }, false},
		{"webp-alpha", func(t testing.TB) []byte { return readCorpus(t, "odd/lossy-alpha.webp") }, false},
		{"heic-turned", func(t testing.TB) []byte { return readFormat(t, "heic/iphone8plus-grid-orientation6-p3.heic") }, false},
		{"avif", func(t testing.TB) []byte { return readFormat(t, "avif/pixel4a-paris-icc-exif-xmp.avif") }, false},
		{"jxl", func(t testing.TB) []byte { return readFormat(t, "jxl/bicycles-codestream.jxl") }, false},
		{"crw", func(t testing.TB) []byte { return readFormat(t, "raw/canon-eos-d30.crw") }, true},
	}
	e := libvips(t, "HEIC, AVIF, JPEG XL and raws need the libvips engine")
	ctx := context.Background()
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			data := f.data(t)
			want := mustProcess(t, e, data).Thumbnail
			got, err := e.Thumbnail(ctx, data, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Width != want.Width || got.Height != want.Height || got.ContentType != want.ContentType {
				t.Fatalf("thumbnail %d×%d %s, Process's %d×%d %s", got.Width, got.Height, got.ContentType,
					want.Width, want.Height, want.ContentType)
			}
			if d := meanDiff(t, got.Data, want.Data); d > 6 && !f.camera {
				t.Errorf("thumbnail differs from Process's by %.1f a sample on average (want ≤ 6 of 255)", d)
			}
		})
	}
	for _, bad := range []string{"bad/empty.jpg", "bad/truncated-progressive.jpg", "bad/bomb-40000x40000.png", "bad/html-named.jpg"} {
		t.Run(bad, func(t *testing.T) {
			data := readCorpus(t, bad)
			_, perr := e.Process(ctx, data, Options{})
			_, terr := e.Thumbnail(ctx, data, Options{})
			if ErrorCode(perr) == "" || ErrorCode(terr) != ErrorCode(perr) {
				t.Fatalf("Thumbnail refused with %q (%v), Process with %q", ErrorCode(terr), terr, ErrorCode(perr))
			}
		})
	}
}

// TestThumbnailOfTheGoEngine checks the pure Go engine's thumbnail, made
// from the whole decode, is its Process's in size and orientation.
func TestThumbnailOfTheGoEngine(t *testing.T) {
	e, err := New(EngineGo, Config{})
	if err != nil {
		t.Fatal(err)
	}
	data := readCorpus(t, "odd/orientation-6.jpg")
	got, err := e.Thumbnail(context.Background(), data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := mustProcess(t, e, data).Thumbnail
	if got.Width != want.Width || got.Height != want.Height || got.Width != 50 || got.Height != 70 {
		t.Fatalf("thumbnail %d×%d, Process's %d×%d, want 50×70", got.Width, got.Height, want.Width, want.Height)
	}
	if d := meanDiff(t, got.Data, want.Data); d > 6 {
		t.Errorf("thumbnail differs from Process's by %.1f a sample on average", d)
	}
}

// meanDiff decodes two JPEGs of one size and returns the mean absolute
// difference of their RGB samples.
func meanDiff(t *testing.T, a, b []byte) float64 {
	t.Helper()
	ia, err := jpeg.Decode(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	ib, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	r := ia.Bounds()
	if r != ib.Bounds() {
		t.Fatalf("sizes %v and %v", r, ib.Bounds())
	}
	var sum, n float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			sum += sampleDiff(ia, ib, x, y)
			n += 3
		}
	}
	return sum / n
}

func sampleDiff(a, b image.Image, x, y int) float64 {
	r1, g1, b1, _ := a.At(x, y).RGBA()
	r2, g2, b2, _ := b.At(x, y).RGBA()
	abs := func(p, q uint32) float64 {
		if p > q {
			return float64(p-q) / 257
		}
		return float64(q-p) / 257
	}
	return abs(r1, r2) + abs(g1, g2) + abs(b1, b2)
}
