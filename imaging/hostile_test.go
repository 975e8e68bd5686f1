package imaging

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lightbox/internal/testenv"
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
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
		var g int
		var h uint64
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if g, h = testenv.Settle(); g <= goroutines && h <= heap+16<<20 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("goroutines %d → %d, heap %d → %d MiB: something is still running", goroutines, g, heap>>20, h>>20)
			}
		}
	})
}
