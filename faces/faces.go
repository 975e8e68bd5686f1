// Package faces finds the faces in a photo through a face provider, and
// measures how sharp each face is.
//
// It detects only: a face is a box with its eyes' openness and the head's
// angles. Nothing here describes a face, tells who it is, or matches it
// with a face in another photo.
//
// The provider is an interface. HTTP talks to any service that answers the
// bundled sidecar's API (faces/sidecar/ in this repository: Node with
// @vladmandic/human on TensorFlow.js's WASM backend). Sharpness is
// computed here, from the pixels the caller already decoded.
package faces

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"time"

	"golang.org/x/image/draw"
)

// Provider finds faces. Implementations are safe for concurrent use.
type Provider interface {
	// Detect finds the faces in a JPEG: the stored preview, upright. An
	// error that wraps ErrUnavailable means the provider cannot answer now
	// and the same call may succeed later; see HTTP for the others.
	Detect(ctx context.Context, jpeg []byte) (Result, error)
}

// Result is what a provider found in one image.
type Result struct {
	Width  int    `json:"width"` // of the image it read, in pixels
	Height int    `json:"height"`
	Faces  []Face `json:"faces"`
	// Model names the detector and its version, to keep beside the faces.
	Model string `json:"model"`
	// Tiles is how many tiles the image was searched in besides the whole
	// frame (small faces); 0 when it was not.
	Tiles  int `json:"tiles"`
	TookMs int `json:"tookMs"`
}

// Face is one face. Left and right are the person's own.
type Face struct {
	Box   Box     `json:"box"`
	Score float64 `json:"score"` // the detector's confidence, 0–1
	// The rest needs the face mesh: a provider may leave them out.
	Landmarks   *Landmarks   `json:"landmarks,omitempty"`
	EyeOpenness *EyeOpenness `json:"eyeOpenness,omitempty"`
	HeadAngles  *HeadAngles  `json:"headAngles,omitempty"`
}

// Box is a rectangle in fractions of the image's width and height, from its
// top left corner.
type Box struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// Point is a position in fractions of the image's width and height.
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Landmarks are the centres of the eyes (the pupils), the nose tip and the
// mouth.
type Landmarks struct {
	LeftEye  Point `json:"leftEye"`
	RightEye Point `json:"rightEye"`
	Nose     Point `json:"nose"`
	Mouth    Point `json:"mouth"`
}

// EyeOpenness is the gap between the eyelids over the height of the eye's
// region, per eye. On the test photos open eyes read 0.25–0.45, closed or
// cast-down eyes under 0.15, and smiling squints in between: compare the
// frames of a burst with each other rather than trusting one threshold.
type EyeOpenness struct {
	Left  float64 `json:"left"`
	Right float64 `json:"right"`
}

// HeadAngles are in degrees, 0 for a face looking straight at the camera.
// Yaw is positive when the face turns toward the image's left, pitch when
// it tilts down, roll when it tilts clockwise as seen in the image.
type HeadAngles struct {
	Yaw   float64 `json:"yaw"`
	Pitch float64 `json:"pitch"`
	Roll  float64 `json:"roll"`
}

// ErrUnavailable is a provider that does not answer now: no connection, a
// timeout, a 408, 429, 502, 503 or 504, or a secret it refuses (401, 403).
// The same call may succeed later, so a task should wait it out without
// counting a failed attempt.
var ErrUnavailable = errors.New("face provider unavailable")

// UnavailableError is an ErrUnavailable with the provider's own estimate of
// when to come back.
type UnavailableError struct {
	// RetryAfter is how long the provider asked callers to wait; 0 when it
	// did not say.
	RetryAfter time.Duration
	Err        error
}

func (e *UnavailableError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("faces: the face provider is unavailable (%v); retry in %s", e.Err, e.RetryAfter)
	}
	return fmt.Sprintf("faces: the face provider is unavailable (%v)", e.Err)
}

func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func (e *UnavailableError) Unwrap() error { return e.Err }

// Rect is b in pixels of an image with bounds r: every pixel b touches,
// clipped to r.
func (b Box) Rect(r image.Rectangle) image.Rectangle {
	w, h := float64(r.Dx()), float64(r.Dy())
	// The slack keeps 0.2+0.4 (0.6000000000000001) of 50 pixels at 30.
	const slack = 1e-9
	out := image.Rect(
		r.Min.X+int(math.Floor(b.X*w+slack)), r.Min.Y+int(math.Floor(b.Y*h+slack)),
		r.Min.X+int(math.Ceil((b.X+b.W)*w-slack)), r.Min.Y+int(math.Ceil((b.Y+b.H)*h-slack)),
	)
	return out.Intersect(r)
}

// SharpnessSide is the longest side a face is read at: a larger face is
// shrunk to it, a smaller one read at its own pixels (enlarging would
// soften it). At 128 the shrink hid a defocus of σ = long edge / 400 on a
// close portrait's face; at 256 it shows on every face of the labelled
// sets.
const SharpnessSide = 256

// Sharpness is how crisp the face in box is, 0–100, read on its grey
// pixels (shrunk to fit SharpnessSide) the way imaging's focus reads a
// tile: the energy of differences one pixel apart over that of differences
// three apart, along four directions. A crisp edge keeps about a third of
// its energy in the fine differences, a blurred one a ninth, whatever its
// contrast, so a smooth-skinned or softly lit face in focus is not read as
// soft (the variance of the Laplacian, used before, was). The ratio 0.10
// is 0 and 0.25 and above is 100. It is 0 for a box under 8 pixels on a
// side.
func Sharpness(img image.Image, box Box) float64 {
	r := box.Rect(img.Bounds())
	if r.Dx() < 8 || r.Dy() < 8 {
		return 0
	}
	w, h := r.Dx(), r.Dy()
	if long := max(w, h); long > SharpnessSide {
		w, h = max(1, w*SharpnessSide/long), max(1, h*SharpnessSide/long)
	}
	g := image.NewGray(image.Rect(0, 0, w, h))
	// BiLinear widens its kernel when it shrinks, so a large face is
	// averaged down rather than sampled (which would add aliasing edges).
	draw.BiLinear.Scale(g, g.Bounds(), img, r, draw.Src, nil)
	ratio := fineToCoarse(g)
	return math.Round(1000*min(1, max(0, (ratio-0.10)/0.15))) / 10
}

// fineToCoarse is g's energy of differences one pixel apart over that of
// differences three apart, along 0°, 90°, 45° and 135°; 0 for a flat g.
func fineToCoarse(g *image.Gray) float64 {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	var fine, coarse int64
	for y := 0; y+3 < h; y++ {
		row := g.Pix[y*g.Stride:][:w]
		d1 := g.Pix[(y+1)*g.Stride:][:w]
		d3 := g.Pix[(y+3)*g.Stride:][:w]
		for x := 3; x+3 < w; x++ {
			p := int64(row[x])
			for _, v := range [4]int64{int64(row[x+1]) - p, int64(d1[x]) - p, int64(d1[x+1]) - p, int64(d1[x-1]) - p} {
				fine += v * v
			}
			for _, v := range [4]int64{int64(row[x+3]) - p, int64(d3[x]) - p, int64(d3[x+3]) - p, int64(d3[x-3]) - p} {
				coarse += v * v
			}
		}
	}
	if coarse == 0 {
		return 0
	}
	return float64(fine) / float64(coarse)
}

// EyesClosedBelow is the openness under which an eye reads closed. On the
// labelled people sets (docs/benchmarks.md) closed and cast-down eyes read
// 0.00–0.15 in the more closed eye, and open ones 0.16 and more but for a
// face 60 px wide in a crowd; eyes shut in a broad smile (0.28) and one
// downcast gaze (0.17) are missed.
const EyesClosedBelow = 0.16

// EyesClosed reports whether an eye of f reads closed; false for a face
// without mesh measures. The more closed eye is taken: the mesh reads a
// cast-down gaze as one eye closed and the other half open, and a face
// turned aside read no more often as a blink on the sets.
func (f Face) EyesClosed() bool {
	e := f.EyeOpenness
	return e != nil && min(e.Left, e.Right) < EyesClosedBelow
}

// SoftBelow is the Sharpness under which a face is out of focus. On the
// labelled people sets (docs/benchmarks.md) faces as taken read 28 and
// more, and the same faces defocused by σ = long edge / 400 read 11–21.
const SoftBelow = 24

// ClippedLevel is the channel value from which a pixel counts as clipped,
// as imaging's highlights do.
const ClippedLevel = 250

// Clipped is the share of the face's pixels in box with a channel at
// ClippedLevel or above: skin lit past the sensor's range. A face keeps
// its highlights in a photo exposed right, however bright the rest of the
// frame; 2.5 EV over, most of the face is gone. 0 for an empty box.
func Clipped(img image.Image, box Box) float64 {
	r := box.Rect(img.Bounds())
	if r.Empty() {
		return 0
	}
	// The face's pixels as 8-bit RGBA, whatever the image's own model
	// (a decoded preview is YCbCr): one conversion, one loop.
	face := image.NewRGBA(r)
	draw.Draw(face, r, img, r.Min, draw.Src)
	clipped := 0
	for i := 0; i < len(face.Pix); i += 4 {
		if max(face.Pix[i], face.Pix[i+1], face.Pix[i+2]) >= ClippedLevel {
			clipped++
		}
	}
	return float64(clipped) / float64(r.Dx()*r.Dy())
}
