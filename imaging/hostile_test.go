package imaging

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lightbox/testsupport/testenv"
)

// TestHostileExifCycle processes a JPEG whose EXIF directories point at
// each other: the photo comes out, the problem is noted, and nothing keeps
// running or holding memory afterwards.
func TestHostileExifCycle(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.Hostile(t), "exif-ifd-cycle.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	forEachEngine(t, func(t *testing.T, e Engine) {
		mustProcess(t, e, data) // warm up the engine's own goroutines and pools
		goroutines, heap := testenv.Settle()
		for range 5 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			r, err := e.Process(ctx, data, Options{})
			cancel()
			if err != nil {
				t.Fatalf("Process: %v", err)
			}
			if !strings.Contains(r.MetadataWarning, "EXIF") {
				t.Errorf("metadata warning %q, want the EXIF problem noted", r.MetadataWarning)
			}
			if r.Width <= 0 || len(r.Thumbnail.Data) == 0 || len(r.Preview.Data) == 0 {
				t.Errorf("no picture: %d×%d", r.Width, r.Height)
			}
		}
		// Wait (with a deadline that only bounds a hang) for anything the
		// engine started to end: a leaked parser never would.
		what := fmt.Sprintf("goroutines back to %d and the heap within 16 MiB of %d MiB", goroutines, heap>>20)
		testenv.Eventually(t, what, 5*time.Minute, func() bool {
			g, h := testenv.Settle()
			return g <= goroutines && h <= heap+16<<20
		})
	})
}

// TestCropOfExtremeAspect renders the cropped presets of a 1×20000 and a
// 20000×1 PNG. Scaling such an image to cover the box before cropping would
// make it billions of pixels; cropping first keeps the work to the box.
func TestCropOfExtremeAspect(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e Engine) {
		// Each render crops a 20000-pixel strip to a 1080-wide frame's shape.
		skipPixelsUnderRace(t, e)
		for _, size := range []image.Point{{1, 20000}, {20000, 1}, {3, 20000}} {
			img := image.NewNRGBA(image.Rect(0, 0, size.X, size.Y))
			for i := range img.Pix {
				img.Pix[i] = byte(i)
			}
			var buf bytes.Buffer
			if err := png.Encode(&buf, img); err != nil {
				t.Fatal(err)
			}
			for _, box := range []image.Point{{1080, 1350}, {1080, 1920}} {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				out, err := e.Render(ctx, buf.Bytes(), RenderOptions{Width: box.X, Height: box.Y, Crop: true})
				cancel()
				if err != nil {
					t.Fatalf("%v into %v: %v", size, box, err)
				}
				// The box is a bound: the largest part of the strip with its
				// shape, never enlarged.
				s := min(1, float64(size.X)/float64(box.X), float64(size.Y)/float64(box.Y))
				want := image.Pt(max(1, int(float64(box.X)*s+0.5)), max(1, int(float64(box.Y)*s+0.5)))
				if b := decodeJPEG(t, out).Bounds(); abs(b.Dx()-want.X) > 1 || abs(b.Dy()-want.Y) > 1 {
					t.Errorf("%v into %v: got %d×%d, want %v", size, box, b.Dx(), b.Dy(), want)
				}
			}
		}
	})
}
