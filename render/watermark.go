package render

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"

	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// The watermark's rows: the text spans about this share of the width,
// rows are this many text heights apart, and the ink is white at about
// 45% over a dark edge, visible on light and dark photos alike.
const (
	markWidthShare = 0.5
	markRowGap     = 3
	markMinPx      = 12
)

var (
	markInk  = image.NewUniform(color.NRGBA{0xff, 0xff, 0xff, 0x73})
	markEdge = image.NewUniform(color.NRGBA{0x00, 0x00, 0x00, 0x40})
)

// Watermark draws text across a JPEG, repeated in staggered rows from top
// to bottom so that no crop of a useful size leaves it out, and encodes the result as a
// JPEG of the same size at quality.
func Watermark(src []byte, text string, quality int) ([]byte, error) {
	img, err := jpeg.Decode(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("decode preview: %w", err)
	}
	out := toRGBA(img)
	b := out.Rect

	f, err := sheetFont()
	if err != nil {
		return nil, err
	}
	// Measure at a reference size, then scale to the share of the width.
	ref, err := opentype.NewFace(f, &opentype.FaceOptions{Size: 100, DPI: 72})
	if err != nil {
		return nil, err
	}
	w := font.MeasureString(ref, text).Ceil()
	px := markMinPx
	if w > 0 {
		px = int(markWidthShare * float64(b.Dx()) * 100 / float64(w))
	}
	// At least three rows, however short the text.
	px = max(markMinPx, min(px, b.Dy()/(3*markRowGap)))
	face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: float64(px), DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return nil, err
	}
	w = font.MeasureString(face, text).Ceil()
	edge, step := max(1, px/24), w+2*px
	for row, y := 0, px; y < b.Dy()+px; row, y = row+1, y+markRowGap*px {
		// Alternate rows are shifted by half a copy.
		for x := px - row%2*step/2; x < b.Dx(); x += step {
			(&font.Drawer{Dst: out, Src: markEdge, Face: face, Dot: fixed.P(x+edge, y+edge)}).DrawString(text)
			(&font.Drawer{Dst: out, Src: markInk, Face: face, Dot: fixed.P(x, y)}).DrawString(text)
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, out, &jpeg.Options{Quality: quality}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
