package imaging

import (
	"image"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"lightbox/assist"
)

// scene paints a 1024 × 768 frame: the left share of it textured around
// sRGB level a (±spread), the rest around b, grey, with noise enough for
// every tile to hold detail, then scaled in linear light by 2^ev, as a
// camera set ev stops away would have caught it.
func scene(share float64, a, b, spread int, ev float64) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, 1024, 768))
	r := rand.New(rand.NewPCG(7, 8))
	gain := math.Pow(2, ev)
	split := int(share * 1024)
	for y := range 768 {
		for x := range 1024 {
			level := b
			if x < split {
				level = a
			}
			v := min(255, max(0, level+r.IntN(2*spread+1)-spread))
			out := uint8(math.Round(255 * encodeSRGB(min(1, gain*linear(uint8(v))))))
			i := y*img.Stride + 4*x
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = out, out, out, 255
		}
	}
	return img
}

func warnings(img image.Image) ([]string, Quality) {
	q := SignalsOf(img)
	p := assist.Photo{Judged: true, Focus: q.Focus, Motion: q.MotionBlur, EV: q.Exposure, Detail: q.Detail}
	return assist.Warnings(p, assist.Defaults()), q
}

// A high-key portrait: a white backdrop (a third of the frame, sRGB
// 225–255) beside a subject in its midtones. Made 3 EV dark, its
// brightest tenth is the backdrop at about sRGB 90, which read −2.0 EV
// when underexposure was read on the tenth; the brightest hundredth puts
// it past the default's −2.2.
func TestHighKeyPortraitThreeStopsDarkIsUnderexposed(t *testing.T) {
	if w, q := warnings(scene(1.0/3, 240, 130, 15, 0)); len(w) > 0 {
		t.Fatalf("the portrait as taken is warned %v (exposure %+.2f EV)", w, q.Exposure)
	}
	w, q := warnings(scene(1.0/3, 240, 130, 15, -3))
	if !slices.Contains(w, assist.WarnUnderexposed) {
		t.Errorf("the portrait 3 EV dark is warned %v, want underexposed (exposure %+.2f EV)", w, q.Exposure)
	}
}

// A low-key portrait: a dark backdrop (two thirds of the frame) beside a
// subject in its midtones. Made 2.5 EV bright the backdrop stays dark, so
// the frame's midtones never lift, and the subject is white: a tenth of
// the frame and more bright with a channel at 255 is overexposed. A good
// photo with a smaller blown sky is not.
func TestLowKeyPortraitBlownIsOverexposed(t *testing.T) {
	if w, q := warnings(scene(2.0/3, 25, 140, 15, 0)); len(w) > 0 {
		t.Fatalf("the portrait as taken is warned %v (exposure %+.2f EV)", w, q.Exposure)
	}
	w, q := warnings(scene(2.0/3, 25, 140, 15, 2.5))
	if !slices.Contains(w, assist.WarnOverexposed) {
		t.Errorf("the portrait 2.5 EV bright is warned %v, want overexposed (exposure %+.2f EV)", w, q.Exposure)
	}
	// A landscape in its midtones under a sky blown white over a tenth
	// of the frame.
	sky := scene(0, 0, 110, 15, 0)
	for y := range 768 {
		for x := range 11 * 1024 / 100 {
			i := y*sky.Stride + 4*x
			sky.Pix[i], sky.Pix[i+1], sky.Pix[i+2] = 255, 255, 255
		}
	}
	if w, q := warnings(sky); len(w) > 0 {
		t.Errorf("a photo with 11 %% of its frame blown is warned %v (exposure %+.2f EV)", w, q.Exposure)
	}
}

// A red flower filling two fifths of the frame: its red channel at 255,
// the others low. That is a colour past sRGB's gamut, dark as light
// goes, and the photo is not overexposed.
func TestDeepColourIsNotOverexposed(t *testing.T) {
	img := scene(0, 0, 120, 15, 0)
	r := rand.New(rand.NewPCG(9, 10))
	for y := range 768 {
		for x := range 2 * 1024 / 5 {
			i := y*img.Stride + 4*x
			img.Pix[i], img.Pix[i+1], img.Pix[i+2] = 255, uint8(20+r.IntN(30)), uint8(30+r.IntN(30))
		}
	}
	if w, q := warnings(img); len(w) > 0 {
		t.Errorf("a deep red flower is warned %v (exposure %+.2f EV)", w, q.Exposure)
	}
}
