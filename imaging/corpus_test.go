package imaging

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// corpusDir finds the shared test images: $LIGHTBOX_CORPUS, else
// ../../shared/corpus from this package (the repository is a sibling of
// shared/). Tests skip when it is absent.
func corpusDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("LIGHTBOX_CORPUS")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", "shared", "corpus")
	}
	if _, err := os.Stat(filepath.Join(dir, "photos")); err != nil {
		tb.Skipf("test corpus not found at %s (set LIGHTBOX_CORPUS): %v", dir, err)
	}
	return dir
}

func readCorpus(tb testing.TB, rel string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir(tb), rel))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// engineNames lists the engines this build has: "vips" only with cgo.
func engineNames() []string {
	if DefaultEngine == EngineVips {
		return []string{EngineGo, EngineVips}
	}
	return []string{EngineGo}
}

// forEachEngine runs the same test body once per engine, the engines in
// parallel.
func forEachEngine(t *testing.T, fn func(t *testing.T, e Engine)) {
	for _, name := range engineNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, err := New(name, Config{})
			if err != nil {
				t.Fatal(err)
			}
			fn(t, e)
		})
	}
}

// skipPixelsUnderRace skips the pure Go engine's work on large photos
// under the race detector. That work is pixel arithmetic on data no other
// goroutine sees: the detector has nothing to find in it, and it makes it
// about ten times slower (ten minutes for this package on two cores).
// `make test` runs this package without -race (NORACE_PKG in the
// Makefile), where nothing is skipped; run under -race by hand, the Go
// engine still runs on the small corpus files and on one photo, and
// libvips on everything.
func skipPixelsUnderRace(t *testing.T, e Engine) {
	t.Helper()
	if raceDetector && e.Name() == EngineGo {
		t.Skip("the Go engine on large photos runs in the pass without -race")
	}
}

func mustProcess(t *testing.T, e Engine, data []byte) *Result {
	t.Helper()
	r, err := e.Process(context.Background(), data, Options{})
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	return r
}

func decodeJPEG(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("output is not a JPEG: %v", err)
	}
	return img
}

// meanAbsDiff is the mean absolute difference per channel (0-255) between
// two images of the same size.
func meanAbsDiff(t *testing.T, a, b image.Image) float64 {
	t.Helper()
	if a.Bounds().Size() != b.Bounds().Size() {
		t.Fatalf("sizes differ: %v and %v", a.Bounds().Size(), b.Bounds().Size())
	}
	var sum float64
	ab, bb := a.Bounds(), b.Bounds()
	for y := 0; y < ab.Dy(); y++ {
		for x := 0; x < ab.Dx(); x++ {
			r1, g1, b1, _ := a.At(ab.Min.X+x, ab.Min.Y+y).RGBA()
			r2, g2, b2, _ := b.At(bb.Min.X+x, bb.Min.Y+y).RGBA()
			sum += absDiff(r1, r2) + absDiff(g1, g2) + absDiff(b1, b2)
		}
	}
	return sum / float64(3*ab.Dx()*ab.Dy())
}

func absDiff(a, b uint32) float64 {
	d := float64(a>>8) - float64(b>>8)
	if d < 0 {
		return -d
	}
	return d
}

func meanRGB(img image.Image) [3]float64 {
	var s [3]float64
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			s[0] += float64(r >> 8)
			s[1] += float64(g >> 8)
			s[2] += float64(bl >> 8)
		}
	}
	n := float64(b.Dx() * b.Dy())
	return [3]float64{s[0] / n, s[1] / n, s[2] / n}
}
