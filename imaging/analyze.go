package imaging

import (
	"image"
	"math"
	"math/bits"
	"sort"

	"github.com/nfnt/resize"
)

// SimilarThreshold is the largest Hamming distance between two PHash values
// that still means "the same photo" (resized, re-encoded or recompressed).
//
// Measured by TestPHashGroups on the 13 corpus photos, each with copies made
// in the test (scaled to 50 % at JPEG quality 95, to 25 % at quality 60, to
// 1000 px at quality 30), hashed by both engines: copies of one photo were at
// most 6 bits apart (the worst pair was the Go and the libvips hash of the
// same original), different photos at least 22 bits apart, median 30. 10
// leaves room on both sides; bursts of near-identical frames can fall
// within it, which is what a duplicate group should catch.
const SimilarThreshold = 10

// Hamming returns the number of differing bits between two hashes.
func Hamming(a, b uint64) int { return bits.OnesCount64(a ^ b) }

// PHash is a 64-bit DCT perceptual hash: the image is turned grey, reduced to
// 32×32 with nfnt/resize, transformed with a 2-D DCT, and each of the 8×8
// lowest-frequency coefficients sets its bit when it is above their median.
// Low frequencies survive resizing and recompression, so copies of a photo
// hash close together, while the DCT is less fooled than a plain
// difference hash by global brightness changes.
func PHash(img image.Image) uint64 {
	const n = 32
	small := resize.Resize(n, n, toGray(img), resize.Bilinear)
	var px [n][n]float64
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			r, _, _, _ := small.At(small.Bounds().Min.X+x, small.Bounds().Min.Y+y).RGBA()
			px[y][x] = float64(r >> 8)
		}
	}
	coef := dct8(&px)
	sorted := append([]float64(nil), coef[1:]...) // the DC term is just the mean
	sort.Float64s(sorted)
	median := (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	var h uint64
	for i, c := range coef {
		if c > median {
			h |= 1 << uint(i)
		}
	}
	return h
}

// dct8 returns the 8×8 lowest-frequency 2-D DCT-II coefficients of a 32×32
// block, row-major.
func dct8(px *[32][32]float64) [64]float64 {
	const n = 32
	var cos [8][n]float64
	for u := 0; u < 8; u++ {
		for x := 0; x < n; x++ {
			cos[u][x] = math.Cos(float64(2*x+1) * float64(u) * math.Pi / (2 * n))
		}
	}
	// Rows first, then columns: 8·32·32 + 8·8·32 multiplications.
	var rows [n][8]float64
	for y := 0; y < n; y++ {
		for u := 0; u < 8; u++ {
			var s float64
			for x := 0; x < n; x++ {
				s += px[y][x] * cos[u][x]
			}
			rows[y][u] = s
		}
	}
	var out [64]float64
	for v := 0; v < 8; v++ {
		for u := 0; u < 8; u++ {
			var s float64
			for y := 0; y < n; y++ {
				s += rows[y][u] * cos[v][y]
			}
			out[v*8+u] = s
		}
	}
	return out
}

// toGray converts to 8-bit luminance (Rec. 601 weights, as JPEG uses).
func toGray(img image.Image) *image.Gray {
	b := img.Bounds()
	g := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
	if rgba, ok := img.(*image.RGBA); ok {
		for y := 0; y < b.Dy(); y++ {
			row := rgba.Pix[y*rgba.Stride:][:4*b.Dx()]
			out := g.Pix[y*g.Stride:][:b.Dx()]
			for x := range out {
				p := row[4*x:][:3] // one bounds check for the three samples
				out[x] = luma(p[0], p[1], p[2])
			}
		}
		return g
	}
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			r, gg, bb, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			g.Pix[y*g.Stride+x] = luma(uint8(r>>8), uint8(gg>>8), uint8(bb>>8))
		}
	}
	return g
}

func luma(r, g, b uint8) uint8 {
	// Unsigned: the division by a constant becomes a multiplication.
	return uint8((299*uint32(r) + 587*uint32(g) + 114*uint32(b) + 500) / 1000)
}

// Clipping thresholds on the 0-255 luminance scale.
const (
	highlightLevel = 250
	shadowLevel    = 5
)

// measureQuality computes Quality on img, which the engines give at a long
// edge of analysisSize (or smaller when the original is smaller).
func measureQuality(img *image.RGBA) Quality {
	st := lumaStatsOf(img)
	var q Quality
	if st.pixels == 0 {
		return q
	}
	n := float64(st.pixels)
	q.MeanLuminance = round(float64(st.sum)/n/255, 4)
	q.HighlightsClipped = round(float64(st.hi)/n, 4)
	q.ShadowsClipped = round(float64(st.lo)/n, 4)
	q.Sharpness = round(st.laplacianVariance(img.Rect.Dx(), img.Rect.Dy()), 2)
	measureSignals(&q, img, toGray(img))
	return q
}

// lumaStats are the sums Quality is made of, over an image's luminance:
// its pixels, their sum, how many are clipped at each end, and the sum
// and sum of squares of the 4-neighbour Laplacian over the interior.
type lumaStats struct {
	pixels, sum, hi, lo int64
	lap, lap2           int64
}

func (st lumaStats) laplacianVariance(w, h int) float64 {
	if w < 3 || h < 3 {
		return 0
	}
	m := float64((w - 2) * (h - 2))
	mean := float64(st.lap) / m
	return float64(st.lap2)/m - mean*mean
}

// goLumaStats is lumaStats in Go: the builds without cgo use it, and the
// tests hold the C version to it.
func goLumaStats(img *image.RGBA) lumaStats {
	g := toGray(img)
	w, h := g.Rect.Dx(), g.Rect.Dy()
	st := lumaStats{pixels: int64(w * h)}
	for _, v := range g.Pix {
		st.sum += int64(v)
		if v >= highlightLevel {
			st.hi++
		}
		if v <= shadowLevel {
			st.lo++
		}
	}
	st.lap, st.lap2 = laplacianSums(g)
	return st
}

// LaplacianVariance is the variance of the 4-neighbour Laplacian of g over
// its interior: high where edges are crisp, low where they are blurred. It
// is 0 for an image under 3 pixels on a side. The sums are in integers:
// exact, and faster than the same sums in floats.
func LaplacianVariance(g *image.Gray) float64 {
	s, s2 := laplacianSums(g)
	return lumaStats{lap: s, lap2: s2}.laplacianVariance(g.Rect.Dx(), g.Rect.Dy())
}

// laplacianSums are the sum and sum of squares of g's 4-neighbour
// Laplacian over its interior.
func laplacianSums(g *image.Gray) (s, s2 int64) {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	if w < 3 || h < 3 {
		return 0, 0
	}
	for y := 1; y < h-1; y++ {
		up, row, down := g.Pix[(y-1)*g.Stride:][:w], g.Pix[y*g.Stride:][:w], g.Pix[(y+1)*g.Stride:][:w]
		for x := 1; x < w-1; x++ {
			l := int64(row[x-1]) + int64(row[x+1]) + int64(up[x]) + int64(down[x]) - 4*int64(row[x])
			s += l
			s2 += l * l
		}
	}
	return s, s2
}
