package embedding

import (
	"context"
	"errors"
	"image"
	"math"

	"github.com/nfnt/resize"
)

// BuiltinModel is the model name of Builtin's vectors. Change it whenever
// the descriptor changes, so old and new vectors are never compared.
const BuiltinModel = "builtin-descriptor-v1"

const (
	side       = 64 // the image is reduced to side×side before anything else
	layoutGrid = 4  // colour layout: layoutGrid×layoutGrid cells
	edgeGrid   = 2  // edge histograms: edgeGrid×edgeGrid cells
	edgeBins   = 8  // orientations over 180°
	builtinDim = layoutGrid*layoutGrid*3 + edgeGrid*edgeGrid*edgeBins

	// edgeWeight balances the edge part (proportions summing to 1) against
	// the colour part (values in about -1..1), so neither drowns the other.
	edgeWeight = 4
)

// Builtin is a deterministic image descriptor of 80 numbers:
//
//   - a colour layout: the mean CIELAB colour of each cell of a 4×4 grid
//     (48 values, L centred on mid-grey), so "a blue top over a green
//     bottom" is close to another blue-over-green picture;
//   - edge orientations: for each quarter of the image, an 8-bin histogram
//     of Sobel gradient directions on the L channel, weighted by strength
//     and normalised to proportions (32 values), so a field of verticals
//     (a forest, blinds) differs from a flat horizon.
//
// The image is first squeezed to 64×64, so the aspect ratio is ignored.
//
// What it does not do: it knows nothing of content. Two photos of the same
// dog on different backgrounds are far apart, and two unrelated photos with
// the same palette and layout are close. It finds near-duplicates and shots
// of one scene (a burst, the same view re-framed slightly) well, and little
// else. Use an HTTP model for semantic similarity.
type Builtin struct{}

func (Builtin) Model() string { return BuiltinModel }

func (Builtin) Dim() int { return builtinDim }

func (Builtin) Embed(ctx context.Context, img image.Image) ([]float32, error) {
	if img == nil || img.Bounds().Empty() {
		return nil, errors.New("embed: empty image")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	small := resize.Resize(side, side, img, resize.Bilinear)
	b := small.Bounds()
	var lab [side][side][3]float64
	for y := 0; y < side; y++ {
		for x := 0; x < side; x++ {
			r, g, bl, _ := small.At(b.Min.X+x, b.Min.Y+y).RGBA()
			lab[y][x] = toLab(r, g, bl)
		}
	}

	v := make([]float32, 0, builtinDim)
	const cell = side / layoutGrid
	for gy := 0; gy < layoutGrid; gy++ {
		for gx := 0; gx < layoutGrid; gx++ {
			var s [3]float64
			for y := gy * cell; y < (gy+1)*cell; y++ {
				for x := gx * cell; x < (gx+1)*cell; x++ {
					for c := range s {
						s[c] += lab[y][x][c]
					}
				}
			}
			n := float64(cell * cell)
			v = append(v, float32((s[0]/n-50)/50), float32(s[1]/n/50), float32(s[2]/n/50))
		}
	}

	var hist [edgeGrid * edgeGrid][edgeBins]float64
	var total float64
	for y := 1; y < side-1; y++ {
		for x := 1; x < side-1; x++ {
			L := func(dx, dy int) float64 { return lab[y+dy][x+dx][0] }
			gx := L(1, -1) + 2*L(1, 0) + L(1, 1) - L(-1, -1) - 2*L(-1, 0) - L(-1, 1)
			gy := L(-1, 1) + 2*L(0, 1) + L(1, 1) - L(-1, -1) - 2*L(0, -1) - L(1, -1)
			m := math.Hypot(gx, gy)
			if m == 0 {
				continue
			}
			theta := math.Atan2(gy, gx)
			if theta < 0 {
				theta += math.Pi
			}
			bin := int(theta/math.Pi*edgeBins) % edgeBins
			q := (y*edgeGrid/side)*edgeGrid + x*edgeGrid/side
			hist[q][bin] += m
			total += m
		}
	}
	for _, h := range hist {
		for _, m := range h {
			if total > 0 {
				m = m / total * edgeWeight
			}
			v = append(v, float32(m))
		}
	}
	if flat(v) {
		// A flat image at exactly mid-grey has no colour offset and no
		// edges; give it the mid-grey direction rather than no vector.
		for i := 0; i < layoutGrid*layoutGrid*3; i += 3 {
			v[i] = 1
		}
	}
	if err := normalize(v); err != nil {
		return nil, err
	}
	return v, nil
}

func flat(v []float32) bool {
	for _, x := range v {
		if math.Abs(float64(x)) > 1e-6 {
			return false
		}
	}
	return true
}

// toLab converts 16-bit sRGB to CIELAB (D65).
func toLab(r, g, b uint32) [3]float64 {
	lin := func(c uint32) float64 {
		v := float64(c) / 0xffff
		if v <= 0.04045 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	R, G, B := lin(r), lin(g), lin(b)
	x := (0.4124*R + 0.3576*G + 0.1805*B) / 0.95047
	y := 0.2126*R + 0.7152*G + 0.0722*B
	z := (0.0193*R + 0.1192*G + 0.9505*B) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return (24389.0/27*t + 16) / 116
	}
	fx, fy, fz := f(x), f(y), f(z)
	return [3]float64{116*fy - 16, 500 * (fx - fy), 200 * (fy - fz)}
}
