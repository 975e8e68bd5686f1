//go:build cgo

package imaging

import (
	"math/rand/v2"
	"testing"
)

// TestBoxRGB checks every averaged pixel against the plain definition: the
// rounded mean of its k×k box, for box sizes the previews use and odd
// picture sizes whose last columns and rows fall outside any whole box.
func TestBoxRGB(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{1, 2, 3, 4, 7, 16, 100} {
		w, h := 5*k+k-1, 3*k+1
		pix := make([]byte, 3*w*h)
		for i := range pix {
			pix[i] = byte(rng.IntN(256))
		}
		// The brightest and darkest boxes catch an overflow or a rounding
		// that drifts at the ends of the scale, and a bright box whose mean
		// falls just short of a half (254.4999 for k=100) catches a
		// reciprocal too coarse for its k.
		for y := range k {
			for x := range k {
				for c := range 3 {
					pix[3*(w*y+x)+c] = 255
					pix[3*(w*y+k+x)+c] = 0
					pix[3*(w*y+2*k+x)+c] = 254
					if y*k+x < (k*k-1)/2 {
						pix[3*(w*y+2*k+x)+c] = 255
					}
				}
			}
		}
		img := boxRGB(pix, w, h, k)
		if img.Rect.Dx() != w/k || img.Rect.Dy() != h/k {
			t.Fatalf("k=%d: got %v, want %d×%d", k, img.Rect, w/k, h/k)
		}
		for oy := range h / k {
			for ox := range w / k {
				for c := range 3 {
					sum := 0
					for y := oy * k; y < (oy+1)*k; y++ {
						for x := ox * k; x < (ox+1)*k; x++ {
							sum += int(pix[3*(w*y+x)+c])
						}
					}
					want := byte((sum + k*k/2) / (k * k))
					if got := img.Pix[oy*img.Stride+4*ox+c]; got != want {
						t.Fatalf("k=%d: pixel (%d,%d) channel %d is %d, want %d", k, ox, oy, c, got, want)
					}
				}
				if a := img.Pix[oy*img.Stride+4*ox+3]; a != 255 {
					t.Fatalf("k=%d: pixel (%d,%d) alpha %d", k, ox, oy, a)
				}
			}
		}
	}
}
