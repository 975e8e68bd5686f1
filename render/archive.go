package render

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"path"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/google/uuid"

	"lightbox/imaging"
)

// An archive renders up to this many photos at once (never more than the
// cores): an export is one task, and the user is waiting for it.
const maxParallelism = 4

// cellQuality is the quality of a contact sheet thumbnail between its
// render and its place on the page; the page is encoded at the export's.
const cellQuality = 92

// Item is a photo as an archive names and dates it.
type Item struct {
	ID             uuid.UUID  // names the entry when Filename cannot
	Filename       string     // the name it was uploaded under
	CapturedAt     *time.Time // when it was taken, if known
	CapturedOffset *string    // the zone the camera recorded ("-07:00"), if it did
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

// Archive is an export's file as it is written: a zip with one entry per
// photo, or, for a contact sheet, a PDF of A4 pages. Zip entries are
// stored, not compressed: photos are compressed already, and storing them
// is as small and far faster.
type Archive struct {
	engine   imaging.Engine
	preset   Preset
	settings Settings
	w        io.Writer
	zip      *zip.Writer     // file presets
	names    map[string]bool // zip entry names taken, lower-cased
	sheet    *sheet          // contact sheets
	pdf      *fpdf.Fpdf      // contact sheets
	written  int
}

// NewArchive starts an archive of preset p with settings s on w. title
// heads each contact sheet page ("Contact sheet" when empty).
func NewArchive(w io.Writer, engine imaging.Engine, p Preset, s Settings, title string) (*Archive, error) {
	a := &Archive{engine: engine, preset: p, settings: s, w: w}
	if p.Name != PresetContactSheet {
		a.zip, a.names = zip.NewWriter(w), map[string]bool{}
	} else {
		if s.PerPage < 1 {
			return nil, fmt.Errorf("render: a contact sheet needs perPage of 1 or more, not %d", s.PerPage)
		}
		if title == "" {
			title = "Contact sheet"
		}
		sh, err := newSheet(s.PerPage, title)
		if err != nil {
			return nil, err
		}
		a.sheet, a.pdf = sh, newPDF(title)
	}
	return a, nil
}

// Write draws items into the archive in their order, rendering several at
// once. read gives item i's source image: its original, or its preview
// when the preset draws from previews and there is one. Each item's outcome
// goes to done, in order: nil once it is in the archive, else the error
// that kept it out; done decides whether that error stops the archive.
// Write stops at the first error done returns, or writing returns.
func (a *Archive) Write(ctx context.Context, items []Item,
	read func(ctx context.Context, i int) ([]byte, error), done func(i int, err error) error) error {
	draw := func(ctx context.Context, i int) (drawn, error) {
		src, err := read(ctx, i)
		if err != nil {
			return drawn{}, err
		}
		return a.draw(ctx, src)
	}
	return inOrder(ctx, parallelism(), len(items), draw, func(i int, d drawn, err error) error {
		if err != nil {
			return done(i, err)
		}
		if err := a.add(items[i], d); err != nil {
			return err
		}
		return done(i, nil)
	})
}

// Written is how many photos are in the archive.
func (a *Archive) Written() int { return a.written }

// Close writes the last contact sheet page, if one is begun, and ends the
// zip or the PDF. It does not close the underlying writer.
func (a *Archive) Close() error {
	if a.sheet == nil {
		return a.zip.Close()
	}
	if a.sheet.n > 0 {
		if err := a.flushPage(); err != nil {
			return err
		}
	}
	return a.pdf.Output(a.w)
}

// drawn is one photo rendered: a file's bytes, or a contact sheet cell.
type drawn struct {
	data []byte
	cell image.Image
}

func (a *Archive) draw(ctx context.Context, src []byte) (drawn, error) {
	if a.sheet == nil {
		data, err := Photo(ctx, a.engine, a.preset, a.settings, src)
		return drawn{data: data}, err
	}
	l := a.sheet.l
	out, err := a.engine.Render(ctx, src, imaging.RenderOptions{Width: l.boxW, Height: l.boxH, Quality: cellQuality})
	if err != nil {
		return drawn{}, err
	}
	cell, err := jpeg.Decode(bytes.NewReader(out))
	return drawn{cell: cell}, err
}

// add puts a drawn photo in the archive: a file entry, or a cell of the
// contact sheet, writing the page once it is full.
func (a *Archive) add(it Item, d drawn) error {
	a.written++
	if a.sheet != nil {
		a.sheet.add(d.cell, it.Filename, captionTime(it))
		if a.sheet.full() {
			return a.flushPage()
		}
		return nil
	}
	f, err := a.zip.CreateHeader(&zip.FileHeader{Name: a.entryName(it), Method: zip.Store, Modified: modTime(it)})
	if err != nil {
		return err
	}
	_, err = f.Write(d.data)
	return err
}

// flushPage puts the sheet's page in the PDF as one full-page JPEG: the
// PDF carries the JPEG's bytes as they are, without decoding them again.
func (a *Archive) flushPage() error {
	var page bytes.Buffer
	if err := a.sheet.encode(&page, a.settings.Quality); err != nil {
		return err
	}
	name := fmt.Sprintf("page-%d", a.sheet.number)
	opts := fpdf.ImageOptions{ImageType: "JPG"}
	a.pdf.AddPage()
	a.pdf.RegisterImageOptionsReader(name, opts, &page)
	a.pdf.ImageOptions(name, 0, 0, a4W, a4H, false, opts, 0, "")
	return a.pdf.Error()
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
	if a.preset.Name != PresetFullRes {
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

func parallelism() int {
	return max(1, min(maxParallelism, runtime.GOMAXPROCS(0)))
}

// inOrder runs work on items 0 to count-1, up to n at a time, and hands
// each result to use in the items' order: the archive's order is stable
// while the CPU-bound renders overlap. At most n+1 results exist at once,
// which bounds memory. It stops at the first error use returns.
func inOrder[T any](ctx context.Context, n, count int,
	work func(context.Context, int) (T, error), use func(int, T, error) error) error {
	type result struct {
		v   T
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	pending := make(chan chan result, n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(pending)
		for i := range count {
			ch := make(chan result, 1)
			select {
			case pending <- ch:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := work(ctx, i)
				ch <- result{v, err}
			}()
		}
	}()
	i := 0
	for ch := range pending {
		var r result
		select {
		case r = <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := use(i, r.v, r.err); err != nil {
			return err
		}
		i++
	}
	return ctx.Err()
}
