package render_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	_ "image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/imaging"
	"lightbox/render"
	"lightbox/testsupport/testenv"
)

func newEngine(t *testing.T) imaging.Engine {
	t.Helper()
	e, err := imaging.New("", imaging.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func readCorpus(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Corpus(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func preset(t *testing.T, name string) render.Preset {
	t.Helper()
	p, ok := render.Lookup(name)
	if !ok {
		t.Fatalf("no preset %q", name)
	}
	return p
}

// jpegSize checks that data is a JPEG and returns its size.
func jpegSize(t *testing.T, what string, data []byte) image.Point {
	t.Helper()
	if !bytes.HasPrefix(data, []byte{0xff, 0xd8, 0xff}) {
		t.Fatalf("%s: not a JPEG (starts % x)", what, data[:min(4, len(data))])
	}
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return img.Bounds().Size()
}

// renderPhotos are corpus files with their size once oriented.
var renderPhotos = []struct {
	name string
	size image.Point
}{
	{"photos/kite-2560x1600.jpg", image.Pt(2560, 1600)},
	{"photos/path-2560x1600.jpg", image.Pt(2560, 1600)},
	{"odd/orientation-6.jpg", image.Pt(50, 70)}, // stored 70x50, turned
	{"odd/rgba8.png", image.Point{}},            // its own size
}

func TestPhotoForEachPreset(t *testing.T) {
	engine := newEngine(t)
	ctx := context.Background()
	for _, ph := range renderPhotos {
		original := readCorpus(t, ph.name)
		orig := ph.size
		if orig == (image.Point{}) {
			c, _, err := image.DecodeConfig(bytes.NewReader(original))
			if err != nil {
				t.Fatal(err)
			}
			orig = image.Pt(c.Width, c.Height)
		}
		// fit is orig scaled into a w by h box, never enlarged; 0 is unbounded.
		fit := func(w, h int) image.Point {
			s := 1.0
			if w > 0 && orig.X > w {
				s = float64(w) / float64(orig.X)
			}
			if h > 0 && float64(orig.Y)*s > float64(h) {
				s = float64(h) / float64(orig.Y)
			}
			return image.Pt(int(float64(orig.X)*s+0.5), int(float64(orig.Y)*s+0.5))
		}
		// crop is a w by h box, shrunk to the largest of its shape that orig
		// covers: a preset's size is a bound, never a reason to enlarge.
		crop := func(w, h int) image.Point {
			s := min(1, float64(orig.X)/float64(w), float64(orig.Y)/float64(h))
			return image.Pt(int(float64(w)*s+0.5), int(float64(h)*s+0.5))
		}
		for _, c := range []struct {
			preset string
			s      render.Settings
			want   image.Point
		}{
			{render.PresetWeb, preset(t, render.PresetWeb).Defaults, fit(2048, 2048)},
			{render.PresetWeb, render.Settings{Width: 800, Quality: 85}, fit(800, 0)},
			{render.PresetInstagramCarousel, preset(t, render.PresetInstagramCarousel).Defaults, crop(1080, 1350)},
			{render.PresetStory9x16, preset(t, render.PresetStory9x16).Defaults, crop(1080, 1920)},
		} {
			what := fmt.Sprintf("%s as %s %+v", ph.name, c.preset, c.s)
			out, err := render.Photo(ctx, engine, preset(t, c.preset), c.s, original)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if got := jpegSize(t, what, out); abs(got.X-c.want.X) > 1 || abs(got.Y-c.want.Y) > 1 {
				t.Errorf("%s: %v, want %v", what, got, c.want)
			}
		}
		out, err := render.Photo(ctx, engine, preset(t, render.PresetFullRes), render.Settings{}, original)
		if err != nil || !bytes.Equal(out, original) {
			t.Errorf("%s as full_res: not the original's bytes (%v)", ph.name, err)
		}
	}
	if _, err := render.Photo(ctx, engine, preset(t, render.PresetContactSheet), render.Settings{}, nil); err == nil {
		t.Error("a contact sheet was drawn as a photo")
	}
}

func abs(n int) int { return max(n, -n) }

// source is a photo to archive and its bytes, or the error reading it gives.
type source struct {
	item render.Item
	data []byte
	err  error
}

func photo(t *testing.T, rel, as string) source {
	return source{item: render.Item{ID: uuid.New(), Filename: as}, data: readCorpus(t, rel)}
}

// archive writes srcs with preset and settings and returns the zip and
// each item's outcome, by file name.
func archive(t *testing.T, name string, s render.Settings, srcs ...source) (*zip.Reader, map[string]error) {
	t.Helper()
	data, outcome := build(t, name, s, srcs...)
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("not a valid zip: %v", err)
	}
	return z, outcome
}

// build draws srcs one by one as an export does (a photo's render, or a
// contact sheet's cells and pages) into an archive of preset name, and
// returns its bytes and each item's outcome.
func build(t *testing.T, name string, s render.Settings, srcs ...source) ([]byte, map[string]error) {
	t.Helper()
	ctx := context.Background()
	var buf bytes.Buffer
	p := preset(t, name)
	a := render.NewArchive(&buf, p, "Shoot")
	var sheet *render.Sheet
	if name == render.PresetContactSheet {
		var err error
		if sheet, err = render.NewSheet(newEngine(t), s, "Shoot", 0); err != nil {
			t.Fatal(err)
		}
	}
	outcome := map[string]error{}
	written := 0
	for _, src := range srcs {
		err := src.err
		switch {
		case err != nil:
		case sheet != nil:
			err = sheet.Add(ctx, src.item, src.data)
		default:
			var out []byte
			if out, err = render.Photo(ctx, newEngine(t), p, s, src.data); err == nil {
				err = a.AddFile(src.item, bytes.NewReader(out))
			}
		}
		outcome[src.item.Filename] = err
		if err == nil {
			written++
		}
		if sheet != nil && sheet.Full() {
			addPage(t, a, sheet)
		}
	}
	if sheet != nil && !sheet.Empty() {
		addPage(t, a, sheet)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if sheet == nil && a.Written() != written {
		t.Errorf("Written() = %d, %d items went in", a.Written(), written)
	}
	return buf.Bytes(), outcome
}

func addPage(t *testing.T, a *render.Archive, sheet *render.Sheet) {
	t.Helper()
	page, err := sheet.Page()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddPage(page); err != nil {
		t.Fatal(err)
	}
}

// read returns an entry's bytes, checking it is stored uncompressed.
func read(t *testing.T, z *zip.Reader, f *zip.File) []byte {
	t.Helper()
	if f.Method != zip.Store {
		t.Errorf("%s is compressed; photos are stored", f.Name)
	}
	data, err := fs.ReadFile(z, f.Name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func names(z *zip.Reader) string {
	var out []string
	for _, f := range z.File {
		out = append(out, f.Name)
	}
	return strings.Join(out, ",")
}

func TestArchiveOfPhotos(t *testing.T) {
	taken := time.Date(2024, 5, 1, 8, 30, 0, 0, time.UTC)
	offset := "+02:00"
	dated := photo(t, "photos/kite-2560x1600.jpg", "IMG_1.JPG")
	dated.item.CapturedAt, dated.item.CapturedOffset = &taken, &offset
	srcs := []source{
		dated,
		photo(t, "photos/path-2560x1600.jpg", "img_1.jpeg"),
		photo(t, "bad/html-named.jpg", "page.jpg"),
		photo(t, "odd/rgba8.png", "IMG_1.jpg"),
		{item: render.Item{ID: uuid.MustParse("0badf00d-0000-4000-8000-000000000000"), Filename: " / "}, data: readCorpus(t, "odd/orientation-6.jpg")},
		{item: render.Item{ID: uuid.New(), Filename: "gone.jpg"}, err: errors.New("the original is missing")},
	}

	t.Run("web", func(t *testing.T) {
		z, outcome := archive(t, render.PresetWeb, render.Settings{LongEdge: 1024, Quality: 80}, srcs...)
		// Rendered names end in .jpg and are unique without regard to case.
		if got := names(z); got != "IMG_1.jpg,img_1-2.jpg,IMG_1-3.jpg,_.jpg" {
			t.Errorf("entries %s", got)
		}
		var bad *imaging.Error
		if !errors.As(outcome["page.jpg"], &bad) || bad.Code == "" {
			t.Errorf("the undecodable file's outcome is %v, want an imaging error with a code", outcome["page.jpg"])
		}
		if outcome["gone.jpg"] == nil || outcome["gone.jpg"].Error() != "the original is missing" {
			t.Errorf("the unreadable file's outcome is %v", outcome["gone.jpg"])
		}
		for _, f := range z.File {
			if got := jpegSize(t, f.Name, read(t, z, f)); max(got.X, got.Y) > 1024 {
				t.Errorf("%s: %v, want within 1024", f.Name, got)
			}
		}
		if m := z.File[0].Modified; !m.Equal(taken) {
			t.Errorf("a dated photo's entry is dated %v, want %v", m, taken)
		}
	})
	t.Run("full_res", func(t *testing.T) {
		z, _ := archive(t, render.PresetFullRes, render.Settings{}, srcs...)
		// Originals keep their extensions and are copied undecoded.
		if got := names(z); got != "IMG_1.JPG,img_1.jpeg,page.jpg,IMG_1-2.jpg,_" {
			t.Errorf("entries %s", got)
		}
		for i, f := range z.File {
			if !bytes.Equal(read(t, z, f), srcs[i].data) {
				t.Errorf("%s: not the original's bytes", f.Name)
			}
		}
	})
	t.Run("name", func(t *testing.T) {
		z, _ := archive(t, render.PresetFullRes, render.Settings{},
			source{item: render.Item{ID: uuid.MustParse("0badf00d-0000-4000-8000-000000000000"), Filename: "  "}, data: []byte("x")})
		if got := names(z); got != "photo-0badf00d" {
			t.Errorf("entries %s", got)
		}
	})
}

func TestArchiveOfContactSheets(t *testing.T) {
	var srcs []source
	for i, rel := range []string{"photos/kite-2560x1600.jpg", "photos/path-2560x1600.jpg", "odd/orientation-6.jpg",
		"odd/rgba8.png", "photos/storm.jpg", "bad/empty.jpg"} {
		srcs = append(srcs, photo(t, rel, fmt.Sprintf("%02d-%s", i, filepath.Base(rel))))
	}
	for _, c := range []struct{ perPage, pages int }{{2, 3}, {5, 1}, {24, 1}} {
		t.Run(fmt.Sprint(c.perPage), func(t *testing.T) {
			data, outcome := build(t, render.PresetContactSheet, render.Settings{PerPage: c.perPage, Quality: 85}, srcs...)
			pages := testenv.PDFPages(t, data)
			if len(pages) != c.pages {
				t.Errorf("%d pages, want %d for 5 photos at %d a page", len(pages), c.pages, c.perPage)
			}
			if outcome["05-empty.jpg"] == nil {
				t.Error("an empty file went on a sheet")
			}
			for i, got := range pages {
				// A4 portrait at 200 dpi.
				if got != image.Pt(1654, 2339) {
					t.Errorf("page %d: %v, want 1654x2339", i+1, got)
				}
			}
		})
	}
	// The old name still makes the same kind of sheet.
	if p, ok := render.Lookup("contact_sheet"); !ok || p.Name != render.PresetContactSheet {
		t.Errorf("contact_sheet is %+v, want an alias of %s", p, render.PresetContactSheet)
	}
}
