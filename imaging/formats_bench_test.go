package imaging

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lightbox/internal/testenv"
)

// BenchmarkFormats makes the thumbnail and the preview of the shared
// formats/ files, one group per format, and reports photos/s beside a
// baseline measured in the same run on the same files: vipsthumbnail
// making both sizes for HEIC, AVIF and JPEG XL; for raws, LibRaw's own
// command-line tools followed by vipsthumbnail (simple_dcraw -e extracting
// the embedded JPEG, or dcraw_emu developing the sensor data to sRGB).
// x_baseline is the engine's rate over the baseline's. Every libvips side
// runs with one thread, as the worker configures the engine.
//
//	go test -run '^$' -bench BenchmarkFormats -benchtime 3x ./imaging
func BenchmarkFormats(b *testing.B) {
	if DefaultEngine != EngineVips {
		b.Skip("these formats need the libvips engine (a build with cgo)")
	}
	dir := testenv.Formats(b)
	groups := []struct {
		name  string
		files []string
		opt   Options
		base  func(b *testing.B, files []string, out string) error
	}{
		// Not the Sony .hif: vipsthumbnail fails on it ("error in tile").
		{"heic", []string{"heic/iphone8plus-grid-orientation6-p3.heic", "heic/iphone13pro-portrait-depthmap-p3.heic",
			"heic/xiaomi-m2012k11ag-android-grid.heic"}, Options{}, vipsthumbnailBase},
		{"avif", []string{"avif/pixel4a-paris-icc-exif-xmp.avif", "avif/cosmos-10bit-444-p3-pq-hdr.avif", "avif/sofa-grid1x5-420.avif"}, Options{}, vipsthumbnailBase},
		{"jxl", []string{"jxl/bicycles-codestream.jxl", "jxl/isobmff-container.jxl"}, Options{}, vipsthumbnailBase},
		// The corpus' raws carry no embedded JPEG of 2048 px; the D30's is
		// 1440 px, so this group asks for a 1440 px preview to measure the
		// embedded-JPEG path.
		{"raw-preview", []string{"raw/canon-eos-d30.crw"}, Options{PreviewSize: 1440}, simpleDcrawBase},
		{"raw-libraw", []string{"raw/canon-eos-d30.crw", "raw/canon550d-magiclantern-14bit-uncompressed.dng"}, Options{}, dcrawEmuBase},
	}
	e, err := New(EngineVips, Config{VipsConcurrency: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, g := range groups {
		b.Run(g.name, func(b *testing.B) {
			var (
				data  [][]byte
				paths []string
			)
			for _, f := range g.files {
				p := filepath.Join(dir, f)
				d, err := os.ReadFile(p)
				if err != nil {
					b.Fatal(err)
				}
				data, paths = append(data, d), append(paths, p)
			}
			base, baseErr := formatBaselineRate(b, g.base, paths)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				for _, d := range data {
					if _, err := e.Process(context.Background(), d, g.opt); err != nil {
						b.Fatal(err)
					}
				}
			}
			rate := float64(b.N*len(data)) / time.Since(start).Seconds()
			b.ReportMetric(rate, "photos/s")
			if baseErr != nil {
				b.Logf("no baseline: %v", baseErr)
				return
			}
			b.ReportMetric(base, "baseline_photos/s")
			b.ReportMetric(rate/base, "x_baseline")
		})
	}
}

// formatBaselineRate times two rounds of the baseline over paths, in photos/s.
func formatBaselineRate(b *testing.B, base func(*testing.B, []string, string) error, paths []string) (float64, error) {
	out := b.TempDir()
	start := time.Now()
	const rounds = 2
	for r := 0; r < rounds; r++ {
		if err := base(b, paths, out); err != nil {
			return 0, err
		}
	}
	return float64(rounds*len(paths)) / time.Since(start).Seconds(), nil
}

func vipsthumbnailBase(_ *testing.B, files []string, out string) error {
	return vipsthumbnail(files, out)
}

// libraw runs one of LibRaw's tools on a copy of f in out (they write
// beside their input) and returns the file it wrote.
func libraw(tool string, args []string, f, out, suffix string) (string, error) {
	bin, err := exec.LookPath(tool)
	if err != nil {
		return "", fmt.Errorf("%s is not installed (Debian: apt-get install libraw-bin)", tool)
	}
	src := filepath.Join(out, filepath.Base(f))
	if _, err := os.Stat(src); err != nil {
		if err := os.Symlink(f, src); err != nil {
			return "", err
		}
	}
	if msg, err := exec.Command(bin, append(args, src)...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", tool, f, err, msg)
	}
	matches, _ := filepath.Glob(src + "*" + suffix)
	for _, m := range matches {
		if !strings.HasSuffix(m, filepath.Ext(f)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%s wrote no %s for %s", tool, suffix, f)
}

func simpleDcrawBase(_ *testing.B, files []string, out string) error {
	for _, f := range files {
		jpg, err := libraw("simple_dcraw", []string{"-e"}, f, out, ".jpg")
		if err != nil {
			return err
		}
		// Its 2048 px box leaves the 1440 px JPEG as it is, like the engine.
		if err := vipsthumbnail([]string{jpg}, out); err != nil {
			return err
		}
	}
	return nil
}

func dcrawEmuBase(_ *testing.B, files []string, out string) error {
	for _, f := range files {
		tif, err := libraw("dcraw_emu", []string{"-w", "-o", "1", "-T"}, f, out, ".tiff")
		if err != nil {
			return err
		}
		if err := vipsthumbnail([]string{tif}, out); err != nil {
			return err
		}
	}
	return nil
}
