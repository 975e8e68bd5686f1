package render

import (
	"archive/zip"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"path"
	"strings"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/google/uuid"
	"github.com/nfnt/resize"

	"lightbox/imaging"
)

// cellQuality is the quality of a contact sheet thumbnail between its
// render and its place on the page; the page is encoded at the export's.
const cellQuality = 92

// Item is a photo as an archive names and dates it.
type Item struct {
	ID             uuid.UUID  // names the entry when Filename cannot
	Filename       string     // the name it was uploaded under
	CapturedAt     *time.Time // when it was taken, if known
	CapturedOffset *string    // the zone the camera recorded ("-07:00"), if it did
	// Rendered: its file is a JPEG drawn for the export (an edited photo
	// of full_res), not the original's bytes.
	Rendered bool
	// Sidecar, when set, is an XMP packet that goes beside the photo,
	// named by SidecarNaming (NamingAdobe when empty).
	Sidecar       []byte
	SidecarNaming string
}

// Photo renders one photo for a file preset from its original: the
// original's own bytes for full_res, else a JPEG made to the preset's box.
// web fits the photo in its box (a square of longEdge by default); the
// social presets fill theirs, centre-cropped.
func Photo(ctx context.Context, engine imaging.Engine, p Preset, s Settings, original []byte) ([]byte, error) {
	switch {
	case p.Name == PresetFullRes:
		return original, nil
	case p.Name == PresetContactSheet:
		return nil, errors.New("render: a contact sheet is drawn as pages, not photos")
	case p.Name == PresetWeb && s.LongEdge > 0:
		return engine.Render(ctx, original, imaging.RenderOptions{Width: s.LongEdge, Height: s.LongEdge, Quality: s.Quality})
	case p.Name == PresetWeb:
		return engine.Render(ctx, original, imaging.RenderOptions{Width: s.Width, Height: s.Height, Quality: s.Quality})
	}
	return engine.Render(ctx, original, imaging.RenderOptions{Width: s.Width, Height: s.Height, Crop: true, Quality: s.Quality})
}

// editedQuality is the JPEG quality of a full_res photo rendered with its
// edit: the original is kept as it is only where there is no edit.
const editedQuality = 95

// EditedPhoto renders one photo for a file preset with its edit e, from
// its original, as Photo does without one: web fits the edited photo in
// its box, the social presets fill theirs centre-cropped, and full_res is
// the edited photo at its full size (up to 8,192 px on the long edge) as a
// JPEG. Nothing is enlarged. shown is the photo's size as shown, when
// known (see EditedImage).
func EditedPhoto(ctx context.Context, engine imaging.Engine, p Preset, s Settings, original []byte, shown image.Point, e Edit) ([]byte, error) {
	var w, h int // the box; 0 is unbounded
	quality := s.Quality
	switch {
	case p.Name == PresetContactSheet:
		return nil, errors.New("render: a contact sheet is drawn as pages, not photos")
	case p.Name == PresetFullRes:
		quality = editedQuality
	case p.Name == PresetWeb && s.LongEdge > 0:
		w, h = s.LongEdge, s.LongEdge
	default:
		w, h = s.Width, s.Height
	}
	long := maxEditSource
	if w > 0 && h > 0 {
		long = max(w, h)
		if p.Name != PresetWeb {
			// Filling a box of another shape crops the long edge: decode
			// enough that the short one still covers the box.
			long = min(maxEditSource, 2*long)
		}
	}
	img, err := EditedImage(ctx, engine, original, shown, e, long)
	if err != nil {
		return nil, err
	}
	var out image.Image = img
	if p.Name != PresetWeb && p.Name != PresetFullRes {
		out = centreCrop(img, w, h)
	}
	return encodeJPEG(fitBox(out, w, h), quality)
}

// fitBox scales m down to fit a w by h box (0: that side unbounded),
// never up.
func fitBox(m image.Image, w, h int) image.Image {
	b := m.Bounds()
	s := 1.0
	if w > 0 {
		s = min(s, float64(w)/float64(b.Dx()))
	}
	if h > 0 {
		s = min(s, float64(h)/float64(b.Dy()))
	}
	if s >= 1 {
		return m
	}
	return resize.Resize(uint(max(1, int(float64(b.Dx())*s+0.5))), uint(max(1, int(float64(b.Dy())*s+0.5))), m, resize.Lanczos3)
}

// centreCrop is the largest centred part of m with the shape of a w by h
// box.
func centreCrop(m *image.RGBA, w, h int) image.Image {
	return m.SubImage(imaging.CentredBox(m.Bounds(), w, h))
}

func encodeJPEG(m image.Image, quality int) ([]byte, error) {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: cmp.Or(quality, 90)}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Archive is an export's file as it is put together from what was drawn
// for it: a zip with one entry per photo, or, for a contact sheet, a PDF
// of A4 pages. Zip entries are stored, not compressed: photos are
// compressed already, and storing them is as small and far faster.
// Nothing here decodes or renders: the drawing is done before, a few
// photos at a time (Photo, Sheet).
type Archive struct {
	preset  Preset
	w       io.Writer
	zip     *zip.Writer     // file presets
	names   map[string]bool // zip entry names taken, lower-cased
	pdf     *fpdf.Fpdf      // contact sheets
	written int
}

// NewArchive starts an archive of preset p on w. title names a contact
// sheet's PDF ("Contact sheet" when empty).
func NewArchive(w io.Writer, p Preset, title string) *Archive {
	a := &Archive{preset: p, w: w}
	if p.Name != PresetContactSheet {
		a.zip, a.names = zip.NewWriter(w), map[string]bool{}
	} else {
		a.pdf = newPDF(cmp.Or(title, "Contact sheet"))
	}
	return a
}

// AddFile puts a photo's file, read from r, in a zip: its original for
// full_res, else its render (Photo).
func (a *Archive) AddFile(it Item, r io.Reader) error {
	if a.zip == nil {
		return errors.New("render: a contact sheet takes pages, not files")
	}
	name := a.entryName(it)
	f, err := a.zip.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store, Modified: modTime(it)})
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		return err
	}
	a.written++
	if it.Sidecar == nil {
		return nil
	}
	// The sidecar follows its photo's entry name, so it pairs with the
	// file as unpacked. Two photos of one base name (a raw and its JPEG)
	// would share an Adobe sidecar; the second keeps its extension.
	side := strings.TrimSuffix(name, path.Ext(name)) + ".xmp"
	if it.SidecarNaming == NamingDarktable || a.names[strings.ToLower(side)] {
		side = name + ".xmp"
	}
	a.names[strings.ToLower(side)] = true
	f, err = a.zip.CreateHeader(&zip.FileHeader{Name: side, Method: zip.Deflate, Modified: modTime(it)})
	if err != nil {
		return err
	}
	_, err = f.Write(it.Sidecar)
	return err
}

// AddPage puts a contact sheet page (Sheet.Page) in the PDF as one
// full-page JPEG: the PDF carries the JPEG's bytes as they are, without
// decoding them again.
func (a *Archive) AddPage(page []byte) error {
	if a.pdf == nil {
		return errors.New("render: only a contact sheet takes pages")
	}
	a.written++
	name := fmt.Sprintf("page-%d", a.written)
	opts := fpdf.ImageOptions{ImageType: "JPG"}
	a.pdf.AddPage()
	a.pdf.RegisterImageOptionsReader(name, opts, bytes.NewReader(page))
	a.pdf.ImageOptions(name, 0, 0, a4W, a4H, false, opts, 0, "")
	return a.pdf.Error()
}

// Written is how many files or pages are in the archive.
func (a *Archive) Written() int { return a.written }

// Close ends the zip or writes the PDF. It does not close the underlying
// writer.
func (a *Archive) Close() error {
	if a.zip != nil {
		return a.zip.Close()
	}
	return a.pdf.Output(a.w)
}

// Sheet draws contact sheet pages, one at a time: a page is drawn whole
// before it is kept, so an export can stop between pages and go on later.
type Sheet struct {
	engine imaging.Engine
	sheet  *sheet
	pageQ  int
}

// NewSheet starts drawing the pages of a contact sheet with settings s;
// title heads each page ("Contact sheet" when empty), and the first page
// drawn is numbered after pagesBefore.
func NewSheet(engine imaging.Engine, s Settings, title string, pagesBefore int) (*Sheet, error) {
	if s.PerPage < 1 {
		return nil, fmt.Errorf("render: a contact sheet needs perPage of 1 or more, not %d", s.PerPage)
	}
	sh, err := newSheet(s.PerPage, cmp.Or(title, "Contact sheet"))
	if err != nil {
		return nil, err
	}
	sh.number = pagesBefore
	return &Sheet{engine: engine, sheet: sh, pageQ: s.Quality}, nil
}

// Add draws a photo from src (its preview, or its original) in the next
// cell of the page, with its file name and capture time.
func (s *Sheet) Add(ctx context.Context, it Item, src []byte) error {
	l := s.sheet.l
	out, err := s.engine.Render(ctx, src, imaging.RenderOptions{Width: l.boxW, Height: l.boxH, Quality: cellQuality})
	if err != nil {
		return err
	}
	cell, err := jpeg.Decode(bytes.NewReader(out))
	if err != nil {
		return err
	}
	s.sheet.add(cell, it.Filename, captionTime(it))
	return nil
}

// Full says the page has a photo in every cell; Empty that it has none.
func (s *Sheet) Full() bool  { return s.sheet.full() }
func (s *Sheet) Empty() bool { return s.sheet.n == 0 }

// Page encodes the page drawn as a JPEG at the sheet's quality; the next
// Add starts a new page.
func (s *Sheet) Page() ([]byte, error) {
	var page bytes.Buffer
	if err := s.sheet.encode(&page, s.pageQ); err != nil {
		return nil, err
	}
	return page.Bytes(), nil
}

// A4 in millimetres, the PDF's unit.
const a4W, a4H = 210, 297

func newPDF(title string) *fpdf.Fpdf {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetTitle(title, true)
	pdf.SetCreator("Lightbox", true)
	pdf.SetMargins(0, 0, 0)
	pdf.SetAutoPageBreak(false, 0)
	return pdf
}

// entryName is the photo's name in the archive: its upload name (with a
// .jpg extension once rendered), made unique without regard to case, as
// the file systems it is unpacked on may not tell case apart.
func (a *Archive) entryName(it Item) string {
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < 0x20 {
			return '_'
		}
		return r
	}, strings.TrimSpace(it.Filename))
	ext := path.Ext(name)
	base := strings.TrimSuffix(name, ext)
	if a.preset.Name != PresetFullRes || it.Rendered {
		ext = ".jpg"
	}
	if base == "" || base == "." || base == ".." {
		base = "photo-" + it.ID.String()[:8]
	}
	name = base + ext
	for i := 2; a.names[strings.ToLower(name)]; i++ {
		name = fmt.Sprintf("%s-%d%s", base, i, ext)
	}
	a.names[strings.ToLower(name)] = true
	return name
}

// modTime dates an entry by when the photo was taken, else now.
func modTime(it Item) time.Time {
	if it.CapturedAt == nil {
		return time.Now()
	}
	return captureTime(it)
}

// captureTime is when the photo was taken, in the zone the camera recorded
// if it did.
func captureTime(it Item) time.Time {
	t := it.CapturedAt.UTC()
	if it.CapturedOffset != nil {
		if z, err := time.Parse("-07:00", *it.CapturedOffset); err == nil {
			_, off := z.Zone()
			t = t.In(time.FixedZone(*it.CapturedOffset, off))
		}
	}
	return t
}

// captionTime is the capture time under a contact sheet cell.
func captionTime(it Item) string {
	if it.CapturedAt == nil {
		return "no capture time"
	}
	if it.CapturedOffset != nil {
		return captureTime(it).Format("2006-01-02 15:04:05 -07:00")
	}
	return captureTime(it).Format("2006-01-02 15:04:05")
}
