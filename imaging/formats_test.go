package imaging

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lightbox/testsupport/testenv"
)

// formatCase is one file of the shared formats/ directory and what must
// come out of it: the displayed size from formats/README.md, or a code.
type formatCase struct {
	file          string
	width, height int
	make, model   string
	code          string // expected error code with the vips engine
}

var formatCases = []formatCase{
	{file: "heic/iphone8plus-grid-orientation6-p3.heic", width: 3024, height: 4032, make: "Apple", model: "iPhone 8 Plus"},
	{file: "heic/iphone13pro-portrait-depthmap-p3.heic", width: 4032, height: 3024, make: "Apple", model: "iPhone 13 Pro"},
	{file: "heic/xiaomi-m2012k11ag-android-grid.heic", width: 2592, height: 1944, make: "Xiaomi", model: "M2012K11AG"},
	{file: "heic/samsung-s24ultra-200mp-orientation6-gainmap.heic", code: CodeTooManyPixels, make: "samsung", model: "Galaxy S24 Ultra"},
	{file: "heic/sony-a7siii-camera-10bit.hif", width: 4240, height: 2832, make: "SONY", model: "ILCE-7SM3"},
	{file: "heic/synthetic-rgba-alpha-128x128.heif", width: 128, height: 128},
	{file: "avif/pixel4a-paris-icc-exif-xmp.avif", width: 403, height: 302, make: "Google", model: "Pixel 4a"},
	{file: "avif/cosmos-10bit-444-p3-pq-hdr.avif", width: 1024, height: 428},
	{file: "avif/sofa-grid1x5-420.avif", width: 1024, height: 770},
	{file: "jxl/bicycles-codestream.jxl", width: 1024, height: 631},
	{file: "jxl/isobmff-container.jxl", width: 640, height: 416},
	{file: "icc/iphone13mini-displayp3-gainmap.jpg", width: 384, height: 512, make: "Apple", model: "iPhone 13 mini"},
	{file: "icc/cmyk-swop-icc.jpg", width: 1080, height: 1080},
	// LibRaw (0.20) develops the active area inside the sensor's 1888×1182.
	{file: "raw/canon550d-magiclantern-14bit-uncompressed.dng", width: 1734, height: 1156, make: "Canon", model: "Canon EOS Kiss X4"},
	// Its embedded JPEG (1440×960) is smaller than a preview, so LibRaw
	// develops the sensor data; LibRaw 0.20 keeps 16 columns and 8 rows more
	// than the 2160×1440 other converters show.
	{file: "raw/canon-eos-d30.crw", width: 2176, height: 1448, make: "Canon", model: "EOS D30"},
	// The stubs have no sensor data: they fail cleanly, their camera read.
	{file: "raw/stubs/canon-350d-stub.cr2", code: CodeCorruptImage, make: "Canon", model: "Canon EOS 350D DIGITAL"},
	{file: "raw/stubs/canon-m50-stub.cr3", code: CodeCorruptImage, make: "Canon", model: "Canon EOS M50"},
	{file: "raw/stubs/fuji-s5pro-stub.raf", code: CodeCorruptImage, make: "FUJIFILM", model: "FinePix S5Pro"},
	{file: "raw/stubs/nikon-d70-stub.nef", code: CodeCorruptImage, make: "NIKON CORPORATION", model: "NIKON D70"},
	{file: "raw/stubs/panasonic-lx3-stub.rw2", code: CodeCorruptImage, make: "Panasonic", model: "DMC-LX3"},
}

func readFormat(tb testing.TB, rel string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Formats(tb), rel))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func TestFormatsCovered(t *testing.T) {
	dir := testenv.Formats(t)
	known := map[string]bool{}
	for _, c := range formatCases {
		known[c.file] = true
	}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) == ".md" {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if !known[filepath.ToSlash(rel)] {
			t.Errorf("formats file %s has no case in formatCases", rel)
		}
		return nil
	})
}

// TestProcessFormats runs every file through each engine: the vips engine
// reads them all, the Go engine reads what Go decodes and refuses the rest
// naming the engine that reads it.
func TestProcessFormats(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e Engine) {
		for _, c := range formatCases {
			t.Run(c.file, func(t *testing.T) {
				data := readFormat(t, c.file)
				r, err := e.Process(context.Background(), data, Options{})
				if e.Name() == EngineGo && !goDecodes(formatOf(data)) {
					if ErrorCode(err) != CodeUnsupportedFormat || !strings.Contains(err.Error(), "libvips") {
						t.Fatalf("got %v, want %s naming the libvips engine", err, CodeUnsupportedFormat)
					}
					return
				}
				if c.code != "" {
					if ErrorCode(err) != c.code {
						t.Fatalf("got error %v, want code %s", err, c.code)
					}
					if m := inspectMetadata(t, data); m.CameraMake != c.make || m.CameraModel != c.model {
						t.Errorf("camera %q %q, want %q %q", m.CameraMake, m.CameraModel, c.make, c.model)
					}
					if formatOf(data).IsRaw() && !strings.Contains(err.Error(), c.model) {
						t.Errorf("the refusal %q does not name the camera", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Process: %v", err)
				}
				checkOutputs(t, r, c.width, c.height)
				if r.Metadata.CameraMake != c.make || r.Metadata.CameraModel != c.model {
					t.Errorf("camera %q %q, want %q %q", r.Metadata.CameraMake, r.Metadata.CameraModel, c.make, c.model)
				}
				if r.MetadataWarning != "" {
					t.Errorf("metadata warning %q", r.MetadataWarning)
				}
			})
		}
	})
}

// libvips returns the "vips" engine, or skips the test, saying why, in a
// build without it.
func libvips(t *testing.T, why string) Engine {
	t.Helper()
	if DefaultEngine != EngineVips {
		t.Skip(why)
	}
	e, err := New(EngineVips, Config{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// inspectMetadata reads what a file says about the camera without decoding.
func inspectMetadata(t *testing.T, data []byte) Metadata {
	h, _ := inspect(data, Config{}.withDefaults())
	m, warn := readMetadata(context.Background(), h)
	if warn != "" {
		t.Logf("metadata warning: %s", warn)
	}
	return m
}

func formatOf(data []byte) Format {
	h, _ := inspect(data, Config{}.withDefaults())
	return h.format
}

// TestRenderFormats makes export images of the new formats: a raw is
// developed (or its embedded JPEG used), not read as its first small TIFF
// image, and every box is respected.
func TestRenderFormats(t *testing.T) {
	e := libvips(t, "these formats need the libvips engine")
	for _, c := range []struct {
		file          string
		width, height int // displayed size
	}{
		{"raw/canon550d-magiclantern-14bit-uncompressed.dng", 1734, 1156},
		{"raw/canon-eos-d30.crw", 2176, 1448},
		{"heic/iphone8plus-grid-orientation6-p3.heic", 3024, 4032},
	} {
		data := readFormat(t, c.file)
		for _, opt := range []RenderOptions{{Width: 800, Height: 800}, {Width: 300, Height: 200, Crop: true}} {
			out, err := e.Render(context.Background(), data, opt)
			if err != nil {
				t.Fatalf("%s %+v: %v", c.file, opt, err)
			}
			img := decodeJPEG(t, out)
			w, h := fitSize(c.width, c.height, 800)
			if opt.Crop {
				w, h = 300, 200
			}
			if got := img.Bounds().Size(); abs(got.X-w) > 1 || abs(got.Y-h) > 1 {
				t.Errorf("%s %+v: %v, want %d×%d", c.file, opt, got, w, h)
			}
		}
	}
}

// TestHEICTurnedOnce checks pixels, not just the size: the iPhone 8 Plus
// photo of an arrow is stored turned (orientation 6, applied by libheif),
// and turned twice it would still be portrait but point down. Upright, the
// arrow's head (long diagonal strokes) fills the top half.
func TestHEICTurnedOnce(t *testing.T) {
	e := libvips(t, "HEIF needs the libvips engine")
	r, err := e.Process(context.Background(), readFormat(t, "heic/iphone8plus-grid-orientation6-p3.heic"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	img := decodeJPEG(t, r.Preview.Data)
	b := img.Bounds()
	var top, bottom int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); (r+g+bl)/3 < 80<<8 {
				if y < b.Min.Y+b.Dy()/2 {
					top++
				} else {
					bottom++
				}
			}
		}
	}
	t.Logf("dark pixels: %d in the top half, %d in the bottom", top, bottom)
	if top < bottom*5/4 {
		t.Errorf("dark pixels: %d in the top half, %d in the bottom: the arrow does not point up", top, bottom)
	}
}
