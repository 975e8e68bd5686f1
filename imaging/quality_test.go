//go:build cgo

package imaging

import (
	"image"
	"math/rand/v2"
	"testing"
)

// The vectorised sums Quality is made of are the Go sums, to the unit, on
// the corpus photos' analysis images and on noise of awkward sizes: too
// small for a Laplacian, one pixel high, and wider than one 2048-column
// run.
func TestLumaStatsInCAreTheGoSums(t *testing.T) {
	var imgs []*image.RGBA
	for _, name := range []string{"photos/kite-2560x1600.jpg", "photos/blinds.jpg", "photos/darkesthour-2560x1600.jpg"} {
		pix, w, ht := scaledCorpus(t, name, 2048)
		mid, err := shrinkRGB(pix, w, ht, analysisSize)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, mid)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range [][2]int{{1, 1}, {2, 7}, {3, 3}, {640, 1}, {4100, 5}, {1024, 683}} {
		img := image.NewRGBA(image.Rect(0, 0, size[0], size[1]))
		for i := range img.Pix {
			img.Pix[i] = uint8(r.UintN(256))
		}
		imgs = append(imgs, img)
	}
	// Clipped both ways: every pixel counts at one end.
	white := image.NewRGBA(image.Rect(0, 0, 300, 200))
	for i := range white.Pix {
		white.Pix[i] = 255
	}
	imgs = append(imgs, white, image.NewRGBA(image.Rect(0, 0, 300, 200)))
	// A sub-image: its stride is wider than its rows.
	imgs = append(imgs, imgs[len(imgs)-4].SubImage(image.Rect(100, 1, 3000, 4)).(*image.RGBA))
	for _, img := range imgs {
		if got, want := lumaStatsOf(img), goLumaStats(img); got != want {
			t.Errorf("%v: C sums %+v, Go sums %+v", img.Rect, got, want)
		}
	}
}
