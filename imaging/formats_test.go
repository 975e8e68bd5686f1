package imaging

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lightbox/internal/testenv"
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
	{file: "heic/samsung-s24ultra-200mp-orientation6-gainmap.heic", code: CodeTooManyPixels},
	{file: "heic/sony-a7siii-camera-10bit.hif", width: 4240, height: 2832, make: "SONY", model: "ILCE-7SM3"},
	{file: "heic/synthetic-rgba-alpha-128x128.heif", width: 128, height: 128},
	{file: "avif/pixel4a-paris-icc-exif-xmp.avif", width: 403, height: 302, make: "Google", model: "Pixel 4a"},
	{file: "avif/cosmos-10bit-444-p3-pq-hdr.avif", width: 1024, height: 428},
	{file: "avif/sofa-grid1x5-420.avif", width: 1024, height: 770},
	{file: "jxl/bicycles-codestream.jxl", width: 1024, height: 631},
	{file: "jxl/isobmff-container.jxl", width: 640, height: 416},
	{file: "icc/iphone13mini-displayp3-gainmap.jpg", width: 384, height: 512, make: "Apple", model: "iPhone 13 mini"},
	{file: "icc/cmyk-swop-icc.jpg", width: 1080, height: 1080},
	{file: "raw/canon550d-magiclantern-14bit-uncompressed.dng", code: CodeUnsupportedFormat},
	{file: "raw/canon-eos-d30.crw", code: CodeUnsupportedFormat},
	{file: "raw/stubs/canon-350d-stub.cr2", code: CodeUnsupportedFormat},
	{file: "raw/stubs/canon-m50-stub.cr3", code: CodeUnsupportedFormat},
	{file: "raw/stubs/fuji-s5pro-stub.raf", code: CodeUnsupportedFormat},
	{file: "raw/stubs/nikon-d70-stub.nef", code: CodeUnsupportedFormat},
	{file: "raw/stubs/panasonic-lx3-stub.rw2", code: CodeUnsupportedFormat},
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
				if e.Name() == EngineGo && !goDecodes(formatOf(data)) && c.code != CodeUnsupportedFormat {
					if ErrorCode(err) != CodeUnsupportedFormat || !strings.Contains(err.Error(), "libvips") {
						t.Fatalf("got %v, want %s naming the libvips engine", err, CodeUnsupportedFormat)
					}
					return
				}
				if c.code != "" {
					if ErrorCode(err) != c.code {
						t.Fatalf("got error %v, want code %s", err, c.code)
					}
					return
				}
				if err != nil {
					t.Fatalf("Process: %v", err)
				}
				if r.Width != c.width || r.Height != c.height {
					t.Errorf("size %d×%d, want %d×%d", r.Width, r.Height, c.width, c.height)
				}
				checkOutput(t, "thumbnail", r.Thumbnail, c.width, c.height, DefaultThumbSize)
				checkOutput(t, "preview", r.Preview, c.width, c.height, DefaultPreviewSize)
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

func formatOf(data []byte) Format {
	h, _ := inspect(data, Config{}.withDefaults())
	return h.format
}
