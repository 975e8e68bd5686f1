package render

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"io"
	"math"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// A contact sheet page is A4 portrait at 200 dpi: a title line, then a
// grid of perPage cells, each a thumbnail with its file name and capture
// time beneath.
const (
	sheetW, sheetH = 1654, 2339
	sheetMargin    = 60
	sheetHeader    = 80
	sheetTitlePx   = 32
	cellPad        = 10
)

var (
	sheetFont = sync.OnceValues(func() (*opentype.Font, error) { return opentype.Parse(goregular.TTF) })
	inkColor  = color.Gray{0x20}
	dimColor  = color.Gray{0x70}
)

// sheetLayout is the grid of a page: about as many columns as make square
// cells, and the box each thumbnail fits in.
type sheetLayout struct {
	perPage, cols, rows int
	cellW, cellH        int
	boxW, boxH          int
	textPx, lineH       int
}

func layoutSheet(perPage int) sheetLayout {
	gw, gh := sheetW-2*sheetMargin, sheetH-2*sheetMargin-sheetHeader
	cols := max(1, int(math.Round(math.Sqrt(float64(perPage)*float64(gw)/float64(gh)))))
	l := sheetLayout{perPage: perPage, cols: cols, rows: (perPage + cols - 1) / cols}
	l.cellW, l.cellH = gw/l.cols, gh/l.rows
	l.textPx = min(28, max(11, l.cellW/18))
	l.lineH = l.textPx * 5 / 4
	l.boxW = l.cellW - 2*cellPad
	l.boxH = max(16, l.cellH-3*cellPad-2*l.lineH)
	return l
}

// sheet is the page being filled.
type sheet struct {
	l               sheetLayout
	title           string
	page            *image.RGBA
	text, head      font.Face
	white, ink, dim *image.Uniform
	n, number       int // cells filled on this page; pages begun
}

func newSheet(perPage int, title string) (*sheet, error) {
	f, err := sheetFont()
	if err != nil {
		return nil, err
	}
	l := layoutSheet(perPage)
	text, err := opentype.NewFace(f, &opentype.FaceOptions{Size: float64(l.textPx), DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return nil, err
	}
	head, err := opentype.NewFace(f, &opentype.FaceOptions{Size: sheetTitlePx, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return nil, err
	}
	return &sheet{l: l, title: title, page: image.NewRGBA(image.Rect(0, 0, sheetW, sheetH)), text: text, head: head,
		white: image.NewUniform(color.White), ink: image.NewUniform(inkColor), dim: image.NewUniform(dimColor)}, nil
}

// add puts a thumbnail and its caption in the next cell, starting a page
// when needed.
func (s *sheet) add(img image.Image, name, when string) {
	if s.n == 0 {
		s.number++
		draw.Draw(s.page, s.page.Rect, s.white, image.Point{}, draw.Src)
		s.write(s.head, s.ink, fmt.Sprintf("%s · page %d", s.title, s.number), sheetMargin, sheetMargin+sheetTitlePx, sheetW-2*sheetMargin)
	}
	x := sheetMargin + (s.n%s.l.cols)*s.l.cellW + cellPad
	y := sheetMargin + sheetHeader + (s.n/s.l.cols)*s.l.cellH + cellPad
	b := img.Bounds()
	at := image.Pt(x+(s.l.boxW-b.Dx())/2, y+(s.l.boxH-b.Dy())/2)
	draw.Draw(s.page, image.Rectangle{Min: at, Max: at.Add(b.Size())}, img, b.Min, draw.Src)
	y += s.l.boxH + cellPad
	s.write(s.text, s.ink, name, x, y+s.l.lineH, s.l.boxW)
	s.write(s.text, s.dim, when, x, y+2*s.l.lineH, s.l.boxW)
	s.n++
}

func (s *sheet) full() bool { return s.n == s.l.perPage }

// encode writes the page as a JPEG; the next add starts a new one.
func (s *sheet) encode(w io.Writer, quality int) error {
	s.n = 0
	return jpeg.Encode(w, s.page, &jpeg.Options{Quality: quality})
}

// write draws text with its baseline at y, cut short with an ellipsis to
// fit width.
func (s *sheet) write(face font.Face, ink *image.Uniform, text string, x, y, width int) {
	if font.MeasureString(face, text).Ceil() > width {
		r := []rune(text)
		for len(r) > 0 && font.MeasureString(face, string(r)+"…").Ceil() > width {
			r = r[:len(r)-1]
		}
		text = string(r) + "…"
	}
	d := font.Drawer{Dst: s.page, Src: ink, Face: face, Dot: fixed.P(x, y)}
	d.DrawString(text)
}
