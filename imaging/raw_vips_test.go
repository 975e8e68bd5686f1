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
