package render

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// Where a watermark goes.
const (
	MarkCorner = "corner" // the bottom right corner, a text height in from the edges
	MarkCenter = "center"
)

// DefaultMarkOpacity is the ink's opacity of a Mark that gives none: seen,
// without hiding the photo a client is choosing.
const DefaultMarkOpacity = 0.3

// Mark is one watermark: its text, where it goes (MarkCorner when empty)
// and the opacity of its ink, 0 to 1 (DefaultMarkOpacity when 0).
type Mark struct {
	Text     string
	Position string
	Opacity  float64
}

// A mark's size: its text is this share of the picture's shorter side
// high, narrowed to at most this share of its width.
var markSizes = map[string]struct{ height, width float64 }{
	MarkCorner: {1.0 / 22, 0.45},
	MarkCenter: {1.0 / 9, 0.8},
}

const markMinPx = 12

// Watermark draws m once on a JPEG, white over a faint dark edge so that
// it reads on light and dark photos alike, and encodes the result as a
// JPEG of the same size at quality. The rest of the picture is left as it
// was: a client sees the photo they are choosing.
func Watermark(src []byte, m Mark, quality int) ([]byte, error) {
	img, err := jpeg.Decode(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("decode preview: %w", err)
	}
	out := toRGBA(img)
	b := out.Rect
	size, ok := markSizes[m.Position]
	if !ok {
		size = markSizes[MarkCorner]
	}
	opacity := m.Opacity
	if opacity <= 0 {
		opacity = DefaultMarkOpacity
	}
	opacity = min(opacity, 1)

	f, err := sheetFont()
	if err != nil {
		return nil, err
	}
	// Measure at a reference size, then scale to the mark's size.
	ref, err := opentype.NewFace(f, &opentype.FaceOptions{Size: 100, DPI: 72})
	if err != nil {
		return nil, err
	}
	px := int(size.height * float64(min(b.Dx(), b.Dy())))
	if w := font.MeasureString(ref, m.Text).Ceil(); w > 0 {
		px = min(px, int(size.width*float64(b.Dx())*100/float64(w)))
	}
	px = max(markMinPx, px)
	face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: float64(px), DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return nil, err
	}
	w := font.MeasureString(face, m.Text).Ceil()
	ascent := face.Metrics().Ascent.Ceil()
	// The baseline's start: the text's box a text height in from the
	// bottom right, or centred.
	x, y := b.Dx()-px-w, b.Dy()-px
	if m.Position == MarkCenter {
		x, y = (b.Dx()-w)/2, (b.Dy()+ascent)/2
	}
	a := uint8(math.Round(opacity * 0xff))
	ink, edge := image.NewUniform(color.NRGBA{0xff, 0xff, 0xff, a}), image.NewUniform(color.NRGBA{A: a / 2})
	off := max(1, px/24)
	(&font.Drawer{Dst: out, Src: edge, Face: face, Dot: fixed.P(x+off, y+off)}).DrawString(m.Text)
	(&font.Drawer{Dst: out, Src: ink, Face: face, Dot: fixed.P(x, y)}).DrawString(m.Text)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, out, &jpeg.Options{Quality: quality}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
