//go:build cgo

package imaging

import (
	"context"
	"testing"
)

// TestRawEmbeddedJPEG covers the embedded-JPEG path, which no shared raw
// takes at the default preview size: a raw's JPEG is used when it covers
// the preview, turned as the camera recorded unless the JPEG says so
// itself, and gives the full size.
func TestRawEmbeddedJPEG(t *testing.T) {
	e, err := New(EngineVips, Config{})
	if err != nil {
		t.Fatal(err)
	}
	v := e.(*vipsEngine)
	for _, c := range []struct {
		name          string
		jpg           []byte
		size          [2]int // the JPEG's, before turning
		turn          int    // the raw's orientation
		preview       int
		width, height int // want
	}{
		// A plain 2560×1600 JPEG in a raw held upright-right: turned once.
		{"turned by the raw", readCorpus(t, "photos/bythewater-2560x1600.jpg"), [2]int{2560, 1600}, 6, 2048, 1600, 2560},
		// The JPEG carries orientation 6 itself: libvips turns it, the raw's
		// orientation is not applied again.
		{"turned by the JPEG", readCorpus(t, "odd/orientation-6.jpg"), [2]int{70, 50}, 6, 64, 50, 70},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := header{format: "nef", width: 1, height: 1, rawJPEG: c.jpg, rawJPEGSize: c.size, rawTurn: c.turn}
			if c.turn >= 5 {
				h.rawJPEGSize = [2]int{c.size[1], c.size[0]}
			}
			d, err := v.derive(context.Background(), nil, h, 1, Options{PreviewSize: c.preview}.withDefaults())
			if err != nil {
				t.Fatal(err)
			}
			if d.width != c.width || d.height != c.height {
				t.Errorf("size %d×%d, want %d×%d", d.width, d.height, c.width, c.height)
			}
			pw, ph := fitSize(c.width, c.height, c.preview)
			if d.preview.Width != pw || d.preview.Height != ph {
				t.Errorf("preview %d×%d, want %d×%d", d.preview.Width, d.preview.Height, pw, ph)
			}
		})
	}
}

// TestPlanRaw checks the choice between a raw's embedded JPEG and LibRaw,
// at full or half size: the output is never smaller than the sensor allows.
func TestPlanRaw(t *testing.T) {
	for _, c := range []struct {
		name           string
		w, h, jpegLong int
		long           int
		want           rawPlan
	}{
		{"full-size JPEG", 6000, 4000, 6000, 2048, rawEmbedded},
		{"JPEG just covers", 6000, 4000, 2048, 2048, rawEmbedded},
		// A 5202 px sensor with a 1,734 px JPEG: half (2601) covers 2048.
		{"small JPEG, large sensor", 5202, 3464, 1734, 2048, rawDevelopHalf},
		{"small JPEG, half too small", 3000, 2000, 1734, 2048, rawDevelopFull},
		{"no JPEG, half just covers", 4096, 2730, 0, 2048, rawDevelopHalf},
		{"no JPEG, half one short", 4094, 2730, 0, 2048, rawDevelopFull},
		{"turned sensor", 2730, 4096, 0, 2048, rawDevelopHalf},
		{"sensor under the preview", 1734, 1156, 0, 2048, rawDevelopFull},
		{"JPEG as large as a small sensor", 1734, 1156, 1734, 2048, rawDevelopFull},
	} {
		if got := planRaw(c.w, c.h, c.jpegLong, c.long); got != c.want {
			t.Errorf("%s: planRaw(%d, %d, %d, %d) = %d, want %d", c.name, c.w, c.h, c.jpegLong, c.long, got, c.want)
		}
	}
}

// TestRawPreviewCoversSensor makes the preview of each shared raw at sizes
// on both sides of its half-size develop and of its embedded JPEG: the
// preview's long edge is the size asked for whenever the developed sensor
// reaches it, and the sensor's own otherwise.
func TestRawPreviewCoversSensor(t *testing.T) {
	e, err := New(EngineVips, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file  string
		long  int // developed long edge (formats/README.md, as LibRaw 0.20 crops)
		sizes []int
	}{
		// Its JPEG is 1440 px: JPEG at 1440, LibRaw half (1088) below,
		// full above.
		{"raw/canon-eos-d30.crw", 2176, []int{2048, 1440, 1088, 1089, 1000, 3000}},
		// No embedded JPEG: half is 867 px.
		{"raw/canon550d-magiclantern-14bit-uncompressed.dng", 1734, []int{2048, 867, 868, 800}},
	} {
		data := readFormat(t, c.file)
		for _, size := range c.sizes {
			r, err := e.Process(context.Background(), data, Options{PreviewSize: size})
			if err != nil {
				t.Fatalf("%s at %d: %v", c.file, size, err)
			}
			if got, want := max(r.Preview.Width, r.Preview.Height), min(size, c.long); got != want {
				t.Errorf("%s: preview long edge %d for %d px asked, want %d", c.file, got, size, want)
			}
		}
	}
}
