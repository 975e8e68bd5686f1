package imaging

import (
	"image"
	"math"
	"slices"
)

// Judged signals: what the raw sums mean for a photographer. They are
// measured on the analysis image's luminance, tile by tile, so that a
// photo is judged where its subject is rather than over the whole frame:
// a shallow depth of field leaves most tiles soft and a few sharp, and is
// not blurred; a missed focus or a shaken camera leaves none sharp.

// Warnings a photo's Quality can carry.
const (
	WarnBlurry       = "blurry"
	WarnMotionBlur   = "motion_blur"
	WarnUnderexposed = "underexposed"
	WarnOverexposed  = "overexposed"
	WarnMisfire      = "misfire"
)

// signalTile is the side of the square tiles a photo is judged in, on the
// analysis image (1024 px long edge): about 32 by 20 tiles.
const signalTile = 32

// Thresholds of the warnings, measured on the labelled set of
// TestSignalsOnTheLabelledSet (see its doc for the figures).
const (
	blurryBelow     = 42   // Focus under this is blurred
	motionAbove     = 55   // MotionBlur over this is a smear
	underBelowEV    = -1.6 // Exposure under this is underexposed
	overAboveEV     = 1.3  // Exposure over this is overexposed
	misfireDetailPx = 0.02 // fewer detailed tiles than this fraction: nothing was photographed
)

// tileStats are one tile's squared luminance differences along four
// directions (0°, 90°, 45°, 135°), one pixel apart (fine) and three apart
// (coarse). A crisp edge puts a quarter of its coarse energy into the fine
// differences, a smooth ramp (a blurred edge) a ninth or less, so the
// ratio says how sharp the tile is along each direction whatever its
// contrast.
type tileStats struct {
	fine, coarse [4]float64
}

func (t tileStats) coarseSum() float64 {
	return t.coarse[0] + t.coarse[1] + t.coarse[2] + t.coarse[3]
}

// ratio is fine over coarse energy along direction d.
func (t tileStats) ratio(d int) float64 {
	if t.coarse[d] == 0 {
		return 0
	}
	return t.fine[d] / t.coarse[d]
}

// judge fills q's judged signals from g, the analysis image's luminance.
func judge(q *Quality, g *image.Gray) {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	q.Exposure = round(exposureEV(g), 2)
	tiles := tilesOf(g)
	if len(tiles) == 0 || w < 3*signalTile || h < 3*signalTile {
		// Too small to judge: no focus or motion reading, no warning
		// from them.
		q.Focus, q.MotionBlur = 100, 0
		q.Warnings = exposureWarnings(q)
		return
	}

	// Detailed tiles: those whose coarse differences average more than
	// a few levels a pixel. Flat sky, a backdrop or JPEG noise are not.
	const detailFloor = 4 * 4 * 4 * signalTile * signalTile // 4 levels a pixel, 4 directions
	var detailed []tileStats
	for _, t := range tiles {
		if t.coarseSum() >= detailFloor {
			detailed = append(detailed, t)
		}
	}
	q.Focus, q.MotionBlur = focusAndMotion(detailed)
	q.Warnings = exposureWarnings(q)
	if float64(len(detailed)) < misfireDetailPx*float64(len(tiles)) {
		q.Warnings = append(q.Warnings, WarnMisfire)
		return
	}
	if q.Focus < blurryBelow {
		q.Warnings = append(q.Warnings, WarnBlurry)
	} else if q.MotionBlur > motionAbove {
		q.Warnings = append(q.Warnings, WarnMotionBlur)
	}
}

// focusAndMotion reads focus and motion blur, 0–100 each, from the
// sharpest detailed tiles: the subject, where the photographer focused.
func focusAndMotion(detailed []tileStats) (focus, motion float64) {
	if len(detailed) == 0 {
		return 0, 0
	}
	// Sharpness of a tile: its mean fine-to-coarse ratio over the four
	// directions; the sharpest tenth (at least three tiles) is the subject.
	sharp := func(t tileStats) float64 {
		return (t.ratio(0) + t.ratio(1) + t.ratio(2) + t.ratio(3)) / 4
	}
	slices.SortFunc(detailed, func(a, b tileStats) int {
		sa, sb := sharp(a), sharp(b)
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0
	})
	n := max(3, len(detailed)/10)
	n = min(n, len(detailed))
	var sum tileStats
	for _, t := range detailed[:n] {
		for d := range 4 {
			sum.fine[d] += t.fine[d]
			sum.coarse[d] += t.coarse[d]
		}
	}
	r := [4]float64{sum.ratio(0), sum.ratio(1), sum.ratio(2), sum.ratio(3)}
	mean := (r[0] + r[1] + r[2] + r[3]) / 4
	focus = mean * 1000
	// A smear along one direction leaves the perpendicular one sharp:
	// among the tiles sharpest along some direction, the softest
	// direction's ratio.
	maxr := func(t tileStats) float64 {
		return max(t.ratio(0), t.ratio(1), t.ratio(2), t.ratio(3))
	}
	slices.SortFunc(detailed, func(a, b tileStats) int {
		sa, sb := maxr(a), maxr(b)
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0
	})
	var s2 tileStats
	for _, t := range detailed[:n] {
		for d := range 4 {
			s2.fine[d] += t.fine[d]
			s2.coarse[d] += t.coarse[d]
		}
	}
	r2 := [4]float64{s2.ratio(0), s2.ratio(1), s2.ratio(2), s2.ratio(3)}
	// Raw readings while the thresholds are calibrated: the mean ratio
	// of the sharpest tenth and the softest direction's ratio, ×1000.
	motion = slices.Min(r2[:]) * 1000
	return round(focus, 1), round(motion, 1)
}

// tilesOf measures every whole signalTile square of g.
func tilesOf(g *image.Gray) []tileStats {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	var tiles []tileStats
	for ty := 0; ty+signalTile <= h; ty += signalTile {
		for tx := 0; tx+signalTile <= w; tx += signalTile {
			tiles = append(tiles, tileAt(g, tx, ty))
		}
	}
	return tiles
}

// tileAt measures the tile whose top-left corner is (tx, ty). Differences
// reach up to three pixels past the tile where the image goes on.
func tileAt(g *image.Gray, tx, ty int) tileStats {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	var t tileStats
	px := func(x, y int) float64 { return float64(g.Pix[y*g.Stride+x]) }
	sq := func(v float64) float64 { return v * v }
	for y := ty; y < ty+signalTile; y++ {
		for x := tx; x < tx+signalTile; x++ {
			p := px(x, y)
			if x+3 < w {
				t.fine[0] += sq(px(x+1, y) - p)
				t.coarse[0] += sq(px(x+3, y) - p)
			}
			if y+3 < h {
				t.fine[1] += sq(px(x, y+1) - p)
				t.coarse[1] += sq(px(x, y+3) - p)
			}
			if x+3 < w && y+3 < h {
				t.fine[2] += sq(px(x+1, y+1) - p)
				t.coarse[2] += sq(px(x+3, y+3) - p)
			}
			if x >= 3 && y+3 < h {
				t.fine[3] += sq(px(x-1, y+1) - p)
				t.coarse[3] += sq(px(x-3, y+3) - p)
			}
		}
	}
	return t
}

// exposureEV judges exposure as an EV offset from a well-exposed photo.
// It reads the luminance of the brighter half of the frame, not the mean:
// a night sky or a black backdrop is dark around a lit subject, while an
// underexposed frame is dark everywhere. A high-key frame is bright
// around its subject but keeps midtones; an overexposed one loses them.
func exposureEV(g *image.Gray) float64 {
	var hist [256]int
	for y := 0; y < g.Rect.Dy(); y++ {
		for _, v := range g.Pix[y*g.Stride:][:g.Rect.Dx()] {
			hist[v]++
		}
	}
	n := g.Rect.Dx() * g.Rect.Dy()
	if n == 0 {
		return 0
	}
	// The 90th and 25th percentiles, in linear light.
	p90, p25 := linear(percentile(&hist, n, 0.90)), linear(percentile(&hist, n, 0.25))
	// Well exposed: the brightest tenth starts near 0.45 linear (sRGB
	// 180); the darkest quarter ends above 0.02 linear (sRGB 40).
	under := math.Log2(max(p90, 1e-4) / 0.45)
	over := math.Log2(max(p25, 1e-4) / 0.05)
	switch {
	case under < 0:
		return under
	case over > 0:
		return over
	}
	return 0
}

func percentile(hist *[256]int, n int, p float64) uint8 {
	want := int(p * float64(n))
	c := 0
	for v, k := range hist {
		c += k
		if c > want {
			return uint8(v)
		}
	}
	return 255
}

// linear turns an 8-bit sRGB value into linear light, 0–1.
func linear(v uint8) float64 {
	c := float64(v) / 255
	if c <= 0.04045 {
		return c / 12.92
	}
	return math.Pow((c+0.055)/1.055, 2.4)
}

func exposureWarnings(q *Quality) []string {
	switch {
	case q.Exposure < underBelowEV:
		return []string{WarnUnderexposed}
	case q.Exposure > overAboveEV:
		return []string{WarnOverexposed}
	}
	return nil
}

func clamp01(v float64) float64 { return min(1, max(0, v)) }
