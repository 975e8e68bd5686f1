package render

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"strings"

	"github.com/nfnt/resize"
	"golang.org/x/image/draw"
	"golang.org/x/image/math/f64"

	"lightbox/imaging"
)

// Crop is a region of a photo in fractions of its width and height, as the
// photo is shown (after its orientation). A crop drawn at a fixed aspect
// ratio keeps it on every photo it goes onto, whatever their shapes:
// Ratio, its width over its height in pixels, then decides its height,
// and X, Y, W and H only where it sits and how wide it is (see pixels).
type Crop struct {
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	W     float64 `json:"w"`
	H     float64 `json:"h"`
	Ratio float64 `json:"ratio,omitempty"`
}

// Bounds of a crop's ratio: a 100:1 strip either way.
const minCropRatio, maxCropRatio = 0.01, 100

// pixels is c on a photo of w×h pixels. A free crop is its fractions. A
// crop with a ratio keeps the centre and width its fractions give, and
// takes its height from the ratio; where that does not fit the photo it
// shrinks to the largest of its ratio that does, and moves inside it.
func (c Crop) pixels(w, h int) image.Rectangle {
	fw, fh := float64(w), float64(h)
	if c.Ratio <= 0 {
		return image.Rect(int(math.Round(c.X*fw)), int(math.Round(c.Y*fh)), int(math.Round((c.X+c.W)*fw)), int(math.Round((c.Y+c.H)*fh)))
	}
	cw := c.W * fw
	ch := cw / c.Ratio
	if ch > fh {
		ch, cw = fh, fh*c.Ratio
	}
	if cw > fw {
		cw, ch = fw, fw/c.Ratio
	}
	x := min(max((c.X+c.W/2)*fw-cw/2, 0), fw-cw)
	y := min(max((c.Y+c.H/2)*fh-ch/2, 0), fh-ch)
	return image.Rect(int(math.Round(x)), int(math.Round(y)), int(math.Round(x+cw)), int(math.Round(y+ch)))
}

// Edit is a set of non-destructive adjustments; the zero value changes
// nothing. Ranges are those of the API.
type Edit struct {
	Exposure    float64 `json:"exposure,omitempty"`    // EV, -5..5
	Contrast    float64 `json:"contrast,omitempty"`    // -1..1
	Saturation  float64 `json:"saturation,omitempty"`  // -1..1
	Vibrance    float64 `json:"vibrance,omitempty"`    // -1..1
	Temperature float64 `json:"temperature,omitempty"` // kelvin shift, -2000..2000; warmer above 0
	Tint        float64 `json:"tint,omitempty"`        // -1..1; magenta above 0, green below
	Crop        *Crop   `json:"crop,omitempty"`
	Rotate      int     `json:"rotate,omitempty"`     // 0, 90, 180 or 270, clockwise
	Straighten  float64 `json:"straighten,omitempty"` // degrees, -45..45, clockwise
}

// ParseEdit reads edit params (a JSON object) strictly: problems maps each
// wrong field ("params.exposure", or an unknown "params.sharpen") to what
// is wrong with it.
func ParseEdit(raw json.RawMessage) (e Edit, problems map[string]string) {
	problems = map[string]string{}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil || in == nil {
		problems["params"] = "must be an object"
		return e, problems
	}
	ranges := map[string]struct {
		dst    *float64
		lo, hi float64
	}{
		"exposure":    {&e.Exposure, -5, 5},
		"contrast":    {&e.Contrast, -1, 1},
		"saturation":  {&e.Saturation, -1, 1},
		"vibrance":    {&e.Vibrance, -1, 1},
		"temperature": {&e.Temperature, -2000, 2000},
		"tint":        {&e.Tint, -1, 1},
		"straighten":  {&e.Straighten, -45, 45},
	}
	for key, v := range in {
		field := "params." + key
		if r, ok := ranges[key]; ok {
			if err := json.Unmarshal(v, r.dst); err != nil || *r.dst < r.lo || *r.dst > r.hi || math.IsNaN(*r.dst) {
				problems[field] = fmt.Sprintf("must be a number from %g to %g", r.lo, r.hi)
			}
			continue
		}
		switch key {
		case "rotate":
			if err := json.Unmarshal(v, &e.Rotate); err != nil || e.Rotate%90 != 0 || e.Rotate < 0 || e.Rotate > 270 {
				problems[field] = "must be 0, 90, 180 or 270"
			}
		case "crop":
			if string(v) == "null" {
				continue
			}
			var c Crop
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil || !c.valid() {
				problems[field] = "must be {x, y, w, h} in fractions: x and y from 0, w and h above 0, x+w and y+h at most 1; " +
					"and, for a fixed aspect ratio, ratio: its width over its height in pixels, from 0.01 to 100"
				continue
			}
			e.Crop = &c
		default:
			problems[field] = "is not an edit parameter; they are " + strings.Join(EditParams(), ", ")
		}
	}
	return e, problems
}

// EditParams lists the parameter names an edit takes, sorted.
func EditParams() []string {
	return []string{"contrast", "crop", "exposure", "rotate", "saturation", "straighten", "temperature", "tint", "vibrance"}
}

func (c Crop) valid() bool {
	const eps = 1e-9
	return c.X >= 0 && c.Y >= 0 && c.W > 0 && c.H > 0 && c.X+c.W <= 1+eps && c.Y+c.H <= 1+eps &&
		(c.Ratio == 0 || c.Ratio >= minCropRatio && c.Ratio <= maxCropRatio)
}

// CheckCropPixels names the sides of e's crop ("params.crop.w",
// "params.crop.h") that are less than one pixel of a photo of width×height
// as shown: a crop that holds no pixel is a mistake, and its fractions only
// grow the size worked out from them.
func CheckCropPixels(e Edit, width, height int64) map[string]string {
	problems := map[string]string{}
	if e.Crop == nil {
		return problems
	}
	const eps = 1e-9 // 1/2560 times 2560 may come out a hair under 1
	for _, side := range []struct {
		name   string
		frac   float64
		pixels int64
	}{{"w", e.Crop.W, width}, {"h", e.Crop.H, height}} {
		if side.pixels > 0 && side.frac*float64(side.pixels) < 1-eps {
			problems["params.crop."+side.name] = fmt.Sprintf("must be at least one pixel of the photo's %d: %.3g or more", side.pixels, 1/float64(side.pixels))
		}
	}
	return problems
}

// Edited is an edit rendered: a preview and a thumbnail, JPEG.
type Edited struct {
	Preview, Thumbnail imaging.Output
}

// maxEditSource bounds the long edge decoded for an edit: a tight crop
// needs more of the original than the preview's size, but never more.
const maxEditSource = 8192

// ApplyEdit renders e onto an original: decoded by engine (so every format
// ingest reads works here too) at the size the crop needs, cropped, turned,
// straightened, adjusted, then scaled to a preview and a thumbnail. shown
// is the photo's size as shown, when known (see EditedImage).
func ApplyEdit(ctx context.Context, engine imaging.Engine, original []byte, shown image.Point, e Edit) (*Edited, error) {
	img, err := EditedImage(ctx, engine, original, shown, e, imaging.DefaultPreviewSize)
	if err != nil {
		return nil, err
	}
	preview, err := encodeFit(img, imaging.DefaultPreviewSize, imaging.DefaultPreviewQuality)
	if err != nil {
		return nil, err
	}
	thumb, err := encodeFit(img, imaging.DefaultThumbSize, imaging.DefaultThumbQuality)
	if err != nil {
		return nil, err
	}
	return &Edited{Preview: preview, Thumbnail: thumb}, nil
}

// EditedImage renders e onto an original: decoded by engine (so every
// format ingest reads works here too) at the size the crop needs for what
// it keeps to reach long pixels on its long edge, cropped, turned,
// straightened and adjusted. What the photo holds bounds it: nothing is
// enlarged, and no more than maxEditSource of the original is decoded.
// shown is the photo's size as shown (after its orientation), when known,
// zero when not: a crop at a fixed ratio keeps a part of it that depends
// on its shape.
func EditedImage(ctx context.Context, engine imaging.Engine, original []byte, shown image.Point, e Edit, long int) (*image.RGBA, error) {
	box := sourceBox(e, long, shown)
	src, err := engine.Render(ctx, original, imaging.RenderOptions{Width: box, Height: box, Quality: 95})
	if err != nil {
		return nil, err
	}
	decoded, err := jpeg.Decode(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("render: decode the edit's source: %w", err)
	}
	img := toRGBA(decoded)
	if e.Crop != nil {
		img = crop(img, *e.Crop)
	}
	img = rotate(img, e.Rotate)
	if e.Straighten != 0 {
		img = straighten(img, e.Straighten)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	adjust(img, e)
	return img, nil
}

// sourceBox is the long edge EditedImage decodes for e: enough that the
// crop still reaches long, never more than maxEditSource. It is worked out
// in floats and clamped before it becomes an int: a size over a crop side
// of 1e-17 is past any int, and converted it turned negative, which the
// engine read as "the whole original".
func sourceBox(e Edit, long int, shown image.Point) int {
	need := float64(long)
	switch c := e.Crop; {
	case c != nil && c.Ratio > 0 && shown.X > 0 && shown.Y > 0:
		r := c.pixels(shown.X, shown.Y)
		need /= max(1e-9, min(float64(r.Dx())/float64(shown.X), float64(r.Dy())/float64(shown.Y)))
	case c != nil && c.Ratio > 0:
		// Its part of a photo of unknown shape: the fractions at worst
		// halved.
		need /= min(c.W, c.H) / 2
	case c != nil:
		need /= min(c.W, c.H)
	}
	if e.Straighten != 0 {
		need *= 1.5 // straightening crops the corners away
	}
	if !(need < maxEditSource) { // NaN too
		return maxEditSource
	}
	return int(math.Ceil(need))
}

func toRGBA(src image.Image) *image.RGBA {
	if m, ok := src.(*image.RGBA); ok {
		return m
	}
	b := src.Bounds()
	m := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(m, m.Bounds(), src, b.Min, draw.Src)
	return m
}

func crop(m *image.RGBA, c Crop) *image.RGBA {
	r := c.pixels(m.Rect.Dx(), m.Rect.Dy()).Add(m.Rect.Min).Intersect(m.Rect)
	if r.Dx() < 1 || r.Dy() < 1 {
		r = image.Rect(r.Min.X, r.Min.Y, r.Min.X+1, r.Min.Y+1).Intersect(m.Rect)
	}
	return toRGBA(m.SubImage(r))
}

// rotate turns m clockwise by a multiple of 90 degrees.
func rotate(m *image.RGBA, degrees int) *image.RGBA {
	if degrees%360 == 0 {
		return m
	}
	w, h := m.Rect.Dx(), m.Rect.Dy()
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	if degrees != 180 {
		out = image.NewRGBA(image.Rect(0, 0, h, w))
	}
	for y := range h {
		for x := range w {
			var dx, dy int
			switch degrees {
			case 90:
				dx, dy = h-1-y, x
			case 180:
				dx, dy = w-1-x, h-1-y
			default: // 270
				dx, dy = y, w-1-x
			}
			copy(out.Pix[out.PixOffset(dx, dy):out.PixOffset(dx, dy)+4], m.Pix[m.PixOffset(x, y):m.PixOffset(x, y)+4])
		}
	}
	return out
}

// straighten turns m clockwise by degrees and keeps the largest centred
// region of the same shape that holds no corner of the turned frame.
func straighten(m *image.RGBA, degrees float64) *image.RGBA {
	w, h := float64(m.Rect.Dx()), float64(m.Rect.Dy())
	th := degrees * math.Pi / 180
	cos, sin := math.Cos(th), math.Abs(math.Sin(th))
	f := min(w/(w*cos+h*sin), h/(w*sin+h*cos))
	ow, oh := max(1, int(w*f)), max(1, int(h*f))
	out := image.NewRGBA(image.Rect(0, 0, ow, oh))
	// The transform maps source to destination: rotate about the source's
	// centre, then move that centre to the destination's.
	c, s := math.Cos(th), math.Sin(th)
	cx, cy, ox, oy := w/2, h/2, float64(ow)/2, float64(oh)/2
	aff := f64.Aff3{
		c, -s, ox - c*cx + s*cy,
		s, c, oy - s*cx - c*cy,
	}
	draw.BiLinear.Transform(out, aff, m, m.Rect, draw.Src, nil)
	return out
}

// adjust applies the tonal and colour adjustments in place. Exposure works
// in linear light; the rest on the sRGB values, as sliders in editors do.
func adjust(m *image.RGBA, e Edit) {
	if e.Exposure == 0 && e.Contrast == 0 && e.Saturation == 0 && e.Vibrance == 0 && e.Temperature == 0 && e.Tint == 0 {
		return
	}
	var lut [256]float64 // sRGB byte → adjusted value before colour, 0..1
	gain := math.Pow(2, e.Exposure)
	for i := range lut {
		v := toSRGB(toLinear(float64(i)/255) * gain)
		lut[i] = (v-0.5)*(1+e.Contrast) + 0.5
	}
	warm := e.Temperature / 2000 * 0.12
	rg, gg, bg := 1+warm, 1-e.Tint*0.1, 1-warm
	for i := 0; i < len(m.Pix); i += 4 {
		r, g, b := lut[m.Pix[i]]*rg, lut[m.Pix[i+1]]*gg, lut[m.Pix[i+2]]*bg
		if e.Saturation != 0 || e.Vibrance != 0 {
			lum := 0.2126*r + 0.7152*g + 0.0722*b
			sat := max(r, g, b) - min(r, g, b)
			k := 1 + e.Saturation + e.Vibrance*(1-math.Min(1, sat))
			r, g, b = lum+(r-lum)*k, lum+(g-lum)*k, lum+(b-lum)*k
		}
		m.Pix[i], m.Pix[i+1], m.Pix[i+2] = clamp8(r), clamp8(g), clamp8(b)
	}
}

func toLinear(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

func toSRGB(v float64) float64 {
	if v <= 0.0031308 {
		return v * 12.92
	}
	return 1.055*math.Pow(v, 1/2.4) - 0.055
}

func clamp8(v float64) uint8 {
	return uint8(math.Round(math.Max(0, math.Min(1, v)) * 255))
}

// encodeFit scales m to fit a square of long px (never up) and encodes it.
func encodeFit(m *image.RGBA, long, quality int) (imaging.Output, error) {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	var img image.Image = m
	if max(w, h) > long {
		if w >= h {
			img = resize.Resize(uint(long), 0, m, resize.Lanczos3)
		} else {
			img = resize.Resize(0, uint(long), m, resize.Lanczos3)
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil {
		return imaging.Output{}, err
	}
	b := img.Bounds()
	return imaging.Output{Data: buf.Bytes(), ContentType: "image/jpeg", Width: b.Dx(), Height: b.Dy()}, nil
}
