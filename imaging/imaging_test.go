package imaging

import (
	"context"
	"errors"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

type corpusCase struct {
	file          string
	width, height int    // oriented
	code          string // expected error code; "" for success
	warning       bool   // a metadata warning is expected
	meta          *Metadata
}

func gps(v float64) *float64 { return &v }

// corpusCases covers every file in the corpus; TestCorpusCovered checks that.
// The EXIF values were read with exiftool.
var corpusCases = []corpusCase{
	{file: "photos/blinds.jpg", width: 1920, height: 1200, meta: &Metadata{CameraMake: "Canon", CameraModel: "Canon EOS 350D DIGITAL", FocalLengthMm: 107, ShutterSpeed: "1/80", Aperture: 5.6, ISO: 400, CapturedAt: "2008-01-22T03:28:22"}},
	{file: "photos/bythewater-2560x1600.jpg", width: 2560, height: 1600, meta: &Metadata{CameraMake: "Nokia", CameraModel: "N9", FocalLengthMm: 28, ShutterSpeed: "1/1000", Aperture: 2.2, ISO: 100, CapturedAt: "2015-04-29T14:33:31"}},
	{file: "photos/coldripple-2560x1600.jpg", width: 2560, height: 1600, meta: &Metadata{CameraMake: "OLYMPUS IMAGING CORP.", CameraModel: "E-M1", FocalLengthMm: 7, ShutterSpeed: "8", Aperture: 5.6, ISO: 200, CapturedAt: "2015-06-21T02:05:56"}},
	{file: "photos/colorfulcups-2560x1600.jpg", width: 2560, height: 1600, meta: &Metadata{CameraMake: "SONY", CameraModel: "NEX-3N", FocalLengthMm: 28, ShutterSpeed: "1/640", Aperture: 8, ISO: 400, CapturedAt: "2014-04-29T14:25:26", GPSLatitude: gps(56.155994), GPSLongitude: gps(10.208206)}},
	{file: "photos/darkesthour-2560x1600.jpg", width: 2560, height: 1600, meta: &Metadata{CameraMake: "OLYMPUS IMAGING CORP.", CameraModel: "E-M1", FocalLengthMm: 14, ShutterSpeed: "0.8", Aperture: 2.8, ISO: 200, CapturedAt: "2015-06-21T01:43:36"}},
	{file: "photos/dune.jpg", width: 1680, height: 1050, meta: &Metadata{CameraMake: "Canon", CameraModel: "Canon EOS DIGITAL REBEL", ShutterSpeed: "1/4000", ISO: 100, CapturedAt: "2007-08-06T10:29:13"}},
	{file: "photos/elephants-3840x2160-progressive.jpg", width: 3840, height: 2160, meta: &Metadata{CameraMake: "SONY", CameraModel: "DSC-RX100M4", FocalLengthMm: 8.8, ShutterSpeed: "1/80", Aperture: 3.5, ISO: 125, CapturedAt: "2020-02-19T16:35:05"}},
	{file: "photos/fallenleaf-2560x1600.jpg", width: 2560, height: 1600, meta: &Metadata{CameraMake: "Canon", CameraModel: "Canon EOS 70D", LensModel: "EF50mm f/1.8 II", FocalLengthMm: 50, ShutterSpeed: "1/4000", Aperture: 2, ISO: 100, CapturedAt: "2015-10-29T15:44:44"}},
	{file: "photos/kite-2560x1600.jpg", width: 2560, height: 1600, meta: &Metadata{CameraMake: "OLYMPUS IMAGING CORP.", CameraModel: "E-M1", FocalLengthMm: 12, ShutterSpeed: "1/160", Aperture: 10, ISO: 200, CapturedAt: "2015-07-21T16:17:44"}},
	{file: "photos/kleiber-6028x3391.jpg", width: 6028, height: 3391, meta: &Metadata{}},
	{file: "photos/path-2560x1600.jpg", width: 2560, height: 1600, meta: &Metadata{CameraMake: "OLYMPUS IMAGING CORP.", CameraModel: "E-M1", FocalLengthMm: 7, ShutterSpeed: "1/15", Aperture: 4.5, ISO: 200, CapturedAt: "2015-09-06T18:46:57"}},
	{file: "photos/storm.jpg", width: 1920, height: 1280, meta: &Metadata{CameraMake: "Canon", CameraModel: "Canon EOS 400D DIGITAL", LensModel: "EF-S18-55mm f/3.5-5.6", FocalLengthMm: 18, ShutterSpeed: "0.4", Aperture: 3.5, ISO: 100, CapturedAt: "2008-04-20T19:12:06"}},
	{file: "photos/wood.jpg", width: 2560, height: 1920, meta: &Metadata{CameraMake: "KONICA MINOLTA", CameraModel: "DiMAGE Z5", FocalLengthMm: 10.28, ShutterSpeed: "1/1000", Aperture: 3.2, ISO: 50, CapturedAt: "2008-04-19T13:43:16"}},

	{file: "odd/cmyk.jpg", width: 150, height: 103},
	{file: "odd/progressive.jpg", width: 150, height: 103},
	{file: "odd/grayscale.jpg", width: 150, height: 103},
	{file: "odd/palette.gif", width: 150, height: 103},
	{file: "odd/interlaced.gif", width: 150, height: 103},
	{file: "odd/gray16.png", width: 32, height: 32},
	{file: "odd/rgb16.png", width: 32, height: 32},
	{file: "odd/rgba8.png", width: 32, height: 32},
	{file: "odd/lossy-alpha.webp", width: 400, height: 301},
	{file: "odd/lossless.webp", width: 600, height: 400},
	{file: "odd/orientation-1.jpg", width: 50, height: 70},
	{file: "odd/orientation-2.jpg", width: 50, height: 70},
	{file: "odd/orientation-3.jpg", width: 50, height: 70},
	{file: "odd/orientation-4.jpg", width: 50, height: 70},
	{file: "odd/orientation-5.jpg", width: 50, height: 70},
	{file: "odd/orientation-6.jpg", width: 50, height: 70},
	{file: "odd/orientation-7.jpg", width: 50, height: 70},
	{file: "odd/orientation-8.jpg", width: 50, height: 70},

	{file: "bad/empty.jpg", code: CodeEmptyFile},
	{file: "bad/html-named.jpg", code: CodeUnsupportedFormat},
	{file: "bad/truncated-progressive.jpg", code: CodeCorruptImage},
	{file: "bad/bomb-40000x40000.png", code: CodeTooManyPixels},
	// Its EXIF block claims more bytes than the file has and no image data
	// follows: there are no pixels to save.
	{file: "bad/exif-huge-tag.jpg", code: CodeCorruptImage},
	// Its EXIF block is broken but the 8×8 image decodes.
	{file: "bad/exif-infinite-loop.jpg", width: 8, height: 8, warning: true},
}

func TestCorpusCovered(t *testing.T) {
	dir := corpusDir(t)
	known := map[string]bool{}
	for _, c := range corpusCases {
		known[c.file] = true
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		if filepath.Ext(rel) != ".md" && !known[filepath.ToSlash(rel)] {
			t.Errorf("corpus file %s has no case in corpusCases", rel)
		}
	}
}

func TestProcessCorpus(t *testing.T) {
	corpusDir(t)
	forEachEngine(t, func(t *testing.T, e Engine) {
		for _, c := range corpusCases {
			t.Run(c.file, func(t *testing.T) {
				t.Parallel()
				if strings.HasPrefix(c.file, "photos/") && c.file != "photos/dune.jpg" {
					skipPixelsUnderRace(t, e)
				}
				r, err := e.Process(context.Background(), readCorpus(t, c.file), Options{})
				if c.code != "" {
					var ie *Error
					if !errors.As(err, &ie) || ie.Code != c.code {
						t.Fatalf("got error %v, want code %s", err, c.code)
					}
					if ie.Message == "" {
						t.Error("error has no message")
					}
					return
				}
				if err != nil {
					t.Fatalf("Process: %v", err)
				}
				checkOutputs(t, r, c.width, c.height)
				if r.Image == nil || r.Image.Bounds().Dx() != r.Thumbnail.Width || r.Image.Bounds().Dy() != r.Thumbnail.Height {
					t.Errorf("Image does not hold the thumbnail's pixels")
				}
				if (r.MetadataWarning != "") != c.warning {
					t.Errorf("metadata warning %q, want one: %v", r.MetadataWarning, c.warning)
				}
				if q := r.Quality; q.MeanLuminance <= 0 || q.MeanLuminance >= 1 || q.Sharpness <= 0 {
					t.Errorf("implausible quality signals %+v", q)
				}
				if c.meta != nil {
					checkMetadata(t, r.Metadata, *c.meta)
				}
			})
		}
	})
}

// checkOutput decodes an output and checks its size: the long edge is
// limit, or the original's when that is smaller, and the aspect ratio holds.
// checkOutputs checks r's size and both its derivatives against an image of
// w×h pixels.
func checkOutputs(t *testing.T, r *Result, w, h int) {
	t.Helper()
	if r.Width != w || r.Height != h {
		t.Errorf("size %d×%d, want %d×%d", r.Width, r.Height, w, h)
	}
	checkOutput(t, "thumbnail", r.Thumbnail, w, h, DefaultThumbSize)
	checkOutput(t, "preview", r.Preview, w, h, DefaultPreviewSize)
}

func checkOutput(t *testing.T, what string, o Output, w, h, limit int) {
	t.Helper()
	if o.ContentType != "image/jpeg" {
		t.Errorf("%s content type %q", what, o.ContentType)
	}
	img := decodeJPEG(t, o.Data)
	if img.Bounds().Dx() != o.Width || img.Bounds().Dy() != o.Height {
		t.Errorf("%s is %v, says %d×%d", what, img.Bounds().Size(), o.Width, o.Height)
	}
	if got, want := max(o.Width, o.Height), min(limit, max(w, h)); got != want {
		t.Errorf("%s long edge %d, want %d", what, got, want)
	}
	if math.Abs(float64(o.Width)/float64(o.Height)-float64(w)/float64(h)) > 0.02*float64(w)/float64(h) {
		t.Errorf("%s is %d×%d, not the shape of %d×%d", what, o.Width, o.Height, w, h)
	}
}

func checkMetadata(t *testing.T, got, want Metadata) {
	t.Helper()
	if got.CameraMake != want.CameraMake || got.CameraModel != want.CameraModel || got.LensModel != want.LensModel {
		t.Errorf("camera %q %q %q, want %q %q %q", got.CameraMake, got.CameraModel, got.LensModel, want.CameraMake, want.CameraModel, want.LensModel)
	}
	if got.FocalLengthMm != want.FocalLengthMm || got.Aperture != want.Aperture || got.ISO != want.ISO || got.ShutterSpeed != want.ShutterSpeed {
		t.Errorf("exposure %vmm f/%v ISO %d %qs, want %vmm f/%v ISO %d %qs", got.FocalLengthMm, got.Aperture, got.ISO, got.ShutterSpeed,
			want.FocalLengthMm, want.Aperture, want.ISO, want.ShutterSpeed)
	}
	if got.CapturedAt != want.CapturedAt {
		t.Errorf("captured at %q, want %q", got.CapturedAt, want.CapturedAt)
	}
	if got.Orientation != 1 {
		t.Errorf("orientation %d, want 1", got.Orientation)
	}
	if (got.GPSLatitude == nil) != (want.GPSLatitude == nil) {
		t.Fatalf("GPS %v %v, want %v %v", got.GPSLatitude, got.GPSLongitude, want.GPSLatitude, want.GPSLongitude)
	}
	if want.GPSLatitude != nil && (math.Abs(*got.GPSLatitude-*want.GPSLatitude) > 1e-5 || math.Abs(*got.GPSLongitude-*want.GPSLongitude) > 1e-5) {
		t.Errorf("GPS %v, %v, want %v, %v", *got.GPSLatitude, *got.GPSLongitude, *want.GPSLatitude, *want.GPSLongitude)
	}
	if want.ShutterSpeed != "" && got.ExposureSeconds <= 0 {
		t.Errorf("exposure seconds %v", got.ExposureSeconds)
	}
}

// TestOrientation checks pixels, not just sizes: every orientation-N file,
// once oriented, must look like orientation-1.
func TestOrientation(t *testing.T) {
	corpusDir(t)
	forEachEngine(t, func(t *testing.T, e Engine) {
		ref := decodeJPEG(t, mustProcess(t, e, readCorpus(t, "odd/orientation-1.jpg")).Thumbnail.Data)
		// The picture is not symmetric: a mirrored copy is far off, so the
		// check below can tell a wrong orientation from JPEG noise.
		if d := meanAbsDiff(t, ref, orient(flatten(ref), 2)); d < 30 {
			t.Fatalf("mirrored reference differs by only %.1f", d)
		}
		for n := 2; n <= 8; n++ {
			r := mustProcess(t, e, readCorpus(t, filepath.Join("odd", "orientation-"+strconv.Itoa(n)+".jpg")))
			if r.Metadata.Orientation != n {
				t.Errorf("orientation-%d: EXIF orientation read as %d", n, r.Metadata.Orientation)
			}
			if d := meanAbsDiff(t, ref, decodeJPEG(t, r.Thumbnail.Data)); d > 8 {
				t.Errorf("orientation-%d: thumbnail differs from orientation-1 by %.1f per channel", n, d)
			}
			if d := meanAbsDiff(t, ref, decodeJPEG(t, r.Preview.Data)); d > 8 {
				t.Errorf("orientation-%d: preview differs from orientation-1 by %.1f per channel", n, d)
			}
		}
	})
}

// TestCMYKColours compares the CMYK JPEG with the RGB JPEG of the same frame.
// Read as RGB, or with ink inverted, the colours would be off by 100 levels
// or more; the engines differ from each other (libvips converts through a
// CMYK ICC profile, Go with the plain formula) but both stay close.
func TestCMYKColours(t *testing.T) {
	corpusDir(t)
	forEachEngine(t, func(t *testing.T, e Engine) {
		want := meanRGB(decodeJPEG(t, mustProcess(t, e, readCorpus(t, "odd/progressive.jpg")).Preview.Data))
		got := meanRGB(decodeJPEG(t, mustProcess(t, e, readCorpus(t, "odd/cmyk.jpg")).Preview.Data))
		for i := range got {
			if math.Abs(got[i]-want[i]) > 50 {
				t.Errorf("CMYK mean colour %.0f, RGB original %.0f", got, want)
				break
			}
		}
		if !(got[0] > got[1] && got[1] > got[2]) {
			t.Errorf("CMYK mean colour %.0f lost the warm cast of %.0f", got, want)
		}
	})
}

func TestLimits(t *testing.T) {
	data := readCorpus(t, "photos/dune.jpg")
	forEachEngine(t, func(t *testing.T, e Engine) {
		for _, tc := range []struct {
			cfg  Config
			code string
		}{
			{Config{MaxBytes: 1000}, CodeTooLarge},
			{Config{MaxPixels: 1680*1050 - 1}, CodeTooManyPixels},
		} {
			e, err := New(e.Name(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Process(context.Background(), data, Options{}); ErrorCode(err) != tc.code {
				t.Errorf("%+v: got %v, want %s", tc.cfg, err, tc.code)
			}
			if _, err := e.Render(context.Background(), data, RenderOptions{Width: 100, Height: 100}); ErrorCode(err) != tc.code {
				t.Errorf("Render %+v: got %v, want %s", tc.cfg, err, tc.code)
			}
		}
		// Exactly at the limit is allowed.
		e, _ = New(e.Name(), Config{MaxPixels: 1680 * 1050})
		if _, err := e.Process(context.Background(), data, Options{}); err != nil {
			t.Errorf("at the pixel limit: %v", err)
		}
	})
}

func TestProcessCanceled(t *testing.T) {
	data := readCorpus(t, "photos/dune.jpg")
	forEachEngine(t, func(t *testing.T, e Engine) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := e.Process(ctx, data, Options{}); !errors.Is(err, context.Canceled) || ErrorCode(err) != "" {
			t.Errorf("got %v, want context.Canceled and no code", err)
		}
	})
}

func TestOptions(t *testing.T) {
	data := readCorpus(t, "photos/dune.jpg")
	forEachEngine(t, func(t *testing.T, e Engine) {
		r, err := e.Process(context.Background(), data, Options{ThumbSize: 100, PreviewSize: 400})
		if err != nil {
			t.Fatal(err)
		}
		if r.Thumbnail.Width != 100 || r.Preview.Width != 400 {
			t.Errorf("thumbnail %d wide, preview %d wide; want 100 and 400", r.Thumbnail.Width, r.Preview.Width)
		}
	})
}

func TestRender(t *testing.T) {
	kleiber := readCorpus(t, "photos/kleiber-6028x3391.jpg")
	rotated := readCorpus(t, "odd/orientation-6.jpg")
	forEachEngine(t, func(t *testing.T, e Engine) {
		for _, tc := range []struct {
			name string
			data []byte
			opt  RenderOptions
			w, h int
		}{
			{"fit", kleiber, RenderOptions{Width: 1080, Height: 1080}, 1080, 608},
			{"fit height", kleiber, RenderOptions{Width: 5000, Height: 500}, 889, 500},
			{"crop 4:5", kleiber, RenderOptions{Width: 1080, Height: 1350, Crop: true}, 1080, 1350},
			{"crop 9:16", kleiber, RenderOptions{Width: 1080, Height: 1920, Crop: true, Quality: 85}, 1080, 1920},
			{"no enlarging", rotated, RenderOptions{Width: 2000, Height: 2000}, 50, 70},
			{"full size, oriented", rotated, RenderOptions{}, 50, 70},
			{"crop oriented", rotated, RenderOptions{Width: 40, Height: 40, Crop: true}, 40, 40},
			// A box larger than the photo is a bound: the largest 2:1 crop of
			// the upright 50×70 photo, not enlarged.
			{"crop never enlarges, oriented", rotated, RenderOptions{Width: 120, Height: 60, Crop: true}, 50, 25},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				if len(tc.data) == len(kleiber) {
					skipPixelsUnderRace(t, e)
				}
				out, err := e.Render(context.Background(), tc.data, tc.opt)
				if err != nil {
					t.Fatal(err)
				}
				b := decodeJPEG(t, out).Bounds()
				if abs(b.Dx()-tc.w) > 1 || abs(b.Dy()-tc.h) > 1 {
					t.Errorf("got %d×%d, want %d×%d", b.Dx(), b.Dy(), tc.w, tc.h)
				}
			})
		}
		// The oriented full-size render matches the upright original.
		up, err := e.Render(context.Background(), readCorpus(t, "odd/orientation-1.jpg"), RenderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		turned, _ := e.Render(context.Background(), rotated, RenderOptions{})
		if d := meanAbsDiff(t, decodeJPEG(t, up), decodeJPEG(t, turned)); d > 8 {
			t.Errorf("rendered orientation-6 differs from orientation-1 by %.1f", d)
		}
		wide := RenderOptions{Width: 120, Height: 60, Crop: true}
		up, _ = e.Render(context.Background(), readCorpus(t, "odd/orientation-1.jpg"), wide)
		turned, _ = e.Render(context.Background(), rotated, wide)
		if d := meanAbsDiff(t, decodeJPEG(t, up), decodeJPEG(t, turned)); d > 8 {
			t.Errorf("2:1 crop of orientation-6 differs from orientation-1's by %.1f", d)
		}
		if _, err := e.Render(context.Background(), readCorpus(t, "bad/html-named.jpg"), RenderOptions{}); ErrorCode(err) != CodeUnsupportedFormat {
			t.Errorf("Render of HTML: %v", err)
		}
	})
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func TestNewUnknownEngine(t *testing.T) {
	if _, err := New("magick", Config{}); err == nil {
		t.Error("New accepted an unknown engine")
	}
	e, err := New("", Config{})
	if err != nil || e.Name() != DefaultEngine {
		t.Errorf("default engine: %v, %v", e, err)
	}
	if DefaultEngine == EngineGo {
		if _, err := New(EngineVips, Config{}); err == nil {
			t.Error("a build without cgo made a vips engine")
		}
	}
}

func TestQualitySignals(t *testing.T) {
	solid := func(c color.Gray) *image.RGBA {
		img := image.NewRGBA(image.Rect(0, 0, 64, 48))
		for i := range img.Pix {
			img.Pix[i] = c.Y
			if i%4 == 3 {
				img.Pix[i] = 255
			}
		}
		return img
	}
	white, black := measureQuality(solid(color.Gray{255})), measureQuality(solid(color.Gray{0}))
	if white.HighlightsClipped != 1 || white.ShadowsClipped != 0 || white.MeanLuminance != 1 || white.Sharpness != 0 {
		t.Errorf("white: %+v", white)
	}
	if black.ShadowsClipped != 1 || black.HighlightsClipped != 0 || black.MeanLuminance != 0 {
		t.Errorf("black: %+v", black)
	}

	// A blurred copy of a photo must score lower on sharpness. The blur is
	// made by shrinking to an eighth and enlarging back.
	data := readCorpus(t, "photos/bythewater-2560x1600.jpg")
	blurred, err := encodeJPEG(resizeTo(resizeTo(decodeJPEG(t, data), 320, 200), 2560, 1600), 90)
	if err != nil {
		t.Fatal(err)
	}
	forEachEngine(t, func(t *testing.T, e Engine) {
		skipPixelsUnderRace(t, e)
		sharp := mustProcess(t, e, data)
		soft := mustProcess(t, e, blurred)
		if soft.Quality.Sharpness >= sharp.Quality.Sharpness/2 {
			t.Errorf("blurred sharpness %.1f, original %.1f", soft.Quality.Sharpness, sharp.Quality.Sharpness)
		}
	})
}

// TestPHashGroups makes resized and re-encoded copies of every photo and
// checks that copies stay within SimilarThreshold of their original while
// different photos stay beyond it. The figures it logs are the ones quoted
// on SimilarThreshold.
func TestPHashGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes every photo several times")
	}
	if raceDetector {
		// Arithmetic on pixels and hashes, with no goroutines of its own.
		t.Skip("decodes every photo several times, ten times slower under -race; runs in the pass without -race")
	}
	dir := corpusDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "photos", "*.jpg"))
	type variant struct {
		photo, name string
		data        []byte
	}
	var variants []variant
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		photo := filepath.Base(f)
		variants = append(variants, variant{photo, "original", data})
		img := decodeJPEG(t, data)
		b := img.Bounds()
		for _, v := range []struct {
			name    string
			scale   float64
			quality int
		}{
			{"50% q95", 0.5, 95},
			{"25% q60", 0.25, 60},
			{"1000px q30", 1000 / float64(max(b.Dx(), b.Dy())), 30},
		} {
			small := resizeTo(img, int(float64(b.Dx())*v.scale), int(float64(b.Dy())*v.scale))
			buf, err := encodeJPEG(small, v.quality)
			if err != nil {
				t.Fatal(err)
			}
			variants = append(variants, variant{photo, v.name, buf})
		}
	}

	hashes := map[string][]uint64{} // engine → hash per variant
	for _, name := range engineNames() {
		e, _ := New(name, Config{})
		for _, v := range variants {
			r, err := e.Process(context.Background(), v.data, Options{})
			if err != nil {
				t.Fatalf("%s %s %s: %v", name, v.photo, v.name, err)
			}
			hashes[name] = append(hashes[name], r.PHash)
		}
	}

	// Compare every pair, within and across engines.
	same, diff := 0, 64
	var sameAt, diffAt string
	var all []int
	names := engineNames()
	for ai, a := range names {
		for _, b := range names[ai:] {
			for i := range variants {
				for j := range variants {
					if a == b && j <= i {
						continue
					}
					d := Hamming(hashes[a][i], hashes[b][j])
					vi, vj := variants[i], variants[j]
					at := a + " " + vi.photo + " " + vi.name + " ~ " + b + " " + vj.photo + " " + vj.name
					if vi.photo == vj.photo {
						if d > same {
							same, sameAt = d, at
						}
					} else {
						all = append(all, d)
						if d < diff {
							diff, diffAt = d, at
						}
					}
				}
			}
		}
	}
	sort.Ints(all)
	t.Logf("copies of one photo: at most %d bits apart (%s)", same, sameAt)
	t.Logf("different photos: at least %d bits apart (%s); median %d", diff, diffAt, all[len(all)/2])
	if same > SimilarThreshold {
		t.Errorf("copies %d bits apart, over SimilarThreshold %d", same, SimilarThreshold)
	}
	if diff <= SimilarThreshold {
		t.Errorf("different photos only %d bits apart, within SimilarThreshold %d", diff, SimilarThreshold)
	}
}

func TestErrorFormat(t *testing.T) {
	err := error(newError(CodeCorruptImage, errors.New("unexpected EOF"), "the %s image cannot be decoded", JPEG))
	if got := err.Error(); !strings.HasPrefix(got, "corrupt_image: the jpeg image") || !strings.HasSuffix(got, "unexpected EOF") {
		t.Errorf("Error() = %q", got)
	}
	if ErrorCode(errors.Join(errors.New("x"), err)) != CodeCorruptImage || ErrorCode(errors.New("x")) != "" {
		t.Error("ErrorCode does not follow the chain")
	}
}
