//go:build cgo

package imaging

import (
	"context"
	"image"
	"math"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
)

// TestHDRToneMapped checks that a PQ HDR AVIF is rendered for SDR, in its
// preview and in a render: read as if its coded values were sRGB it is
// flat and grey; tone-mapped its contrast is clearly higher.
func TestHDRToneMapped(t *testing.T) {
	e := libvips(t, "HDR formats are read by the libvips engine")
	data := readFormat(t, "avif/cosmos-10bit-444-p3-pq-hdr.avif")
	r, err := e.Process(context.Background(), data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := inspect(data, e.(*vipsEngine).cfg)
	h.hdrTransfer = 0
	flat, err := e.(*vipsEngine).derive(context.Background(), data, h, 1, Options{}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	got, base := lumaSpread(decodeJPEG(t, r.Preview.Data)), lumaSpread(decodeJPEG(t, flat.preview.Data))
	t.Logf("luma standard deviation %.1f tone-mapped, %.1f coded values as sRGB", got, base)
	if got < base*1.15 {
		t.Errorf("tone-mapped contrast %.1f is not clearly above %.1f", got, base)
	}
	// A render (an edit's or an export's) is tone-mapped the same way.
	rendered, err := e.Render(context.Background(), data, RenderOptions{Width: 800})
	if err != nil {
		t.Fatal(err)
	}
	if spread := lumaSpread(decodeJPEG(t, rendered)); spread < base*1.15 {
		t.Errorf("rendered contrast %.1f is not clearly above %.1f", spread, base)
	}
}

// lumaSpread is the standard deviation of luma (0-255).
func lumaSpread(img image.Image) float64 {
	b := img.Bounds()
	var sum, sq, n float64
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			l := (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(bl)) / 257
			sum, sq, n = sum+l, sq+l*l, n+1
		}
	}
	return math.Sqrt(sq/n - (sum/n)*(sum/n))
}

// TestSRGBProfileRecognised checks the shortcut that skips converting an
// sRGB-tagged photo: a camera's sRGB profile is recognised, Display P3 and
// a CMYK profile are not.
func TestSRGBProfileRecognised(t *testing.T) {
	for _, c := range []struct {
		data []byte
		srgb bool
	}{
		{readCorpus(t, "photos/colorfulcups-2560x1600.jpg"), true},
		{readFormat(t, "icc/iphone13mini-displayp3-gainmap.jpg"), false},
		{readFormat(t, "icc/cmyk-swop-icc.jpg"), false},
	} {
		ref, err := vips.LoadThumbnailFromBuffer(c.data, 64, 64, vips.InterestingNone, vips.SizeDown, importParams())
		if err != nil {
			t.Fatal(err)
		}
		if got := isSRGBProfile(ref.GetICCProfile()); got != c.srgb {
			t.Errorf("isSRGBProfile = %v, want %v", got, c.srgb)
		}
		ref.Close()
	}
}
