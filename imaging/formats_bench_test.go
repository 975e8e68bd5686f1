package imaging

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lightbox/testsupport/procstat"
	"lightbox/testsupport/testenv"
)

// BenchmarkFormats makes the thumbnail and the preview of the shared
// formats/ files, one group per format, and reports photos/s beside a
// baseline measured in the same run on the same files: vipsthumbnail
// making both sizes for HEIC, AVIF and JPEG XL; for raws, LibRaw's own
// command-line tools followed by vipsthumbnail (simple_dcraw -e extracting
// the embedded JPEG, or dcraw_emu developing the sensor data to sRGB).
// x_baseline is the engine's rate over the baseline's. HEIC, AVIF and JPEG
// XL are also measured beside sharp as Immich uses it (x_sharp, see
// sharp_bench_test.go), its rounds alternating with the engine's; npm's
// sharp reads no HEVC, no JPEG XL and not the 10-bit AVIF, so for these
// three sharp is built against the system's libvips (systemSharp).
// For HEIC it also reports decode_of_process_cpu: the CPU time of libvips
// decoding the same files whole, and nothing else, over the engine's.
// Every libvips side runs with one thread, as the worker configures the
// engine.
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
		sharp sharpBuild
	}{
		// Not the Sony .hif: vipsthumbnail fails on it ("error in tile").
		{"heic", []string{"heic/iphone8plus-grid-orientation6-p3.heic", "heic/iphone13pro-portrait-depthmap-p3.heic",
			"heic/xiaomi-m2012k11ag-android-grid.heic"}, Options{}, vipsthumbnailBase, systemSharp},
		{"avif", []string{"avif/pixel4a-paris-icc-exif-xmp.avif", "avif/cosmos-10bit-444-p3-pq-hdr.avif", "avif/sofa-grid1x5-420.avif"}, Options{}, vipsthumbnailBase, systemSharp},
		{"jxl", []string{"jxl/bicycles-codestream.jxl", "jxl/isobmff-container.jxl"}, Options{}, vipsthumbnailBase, systemSharp},
		// The corpus' raws carry no embedded JPEG of 2048 px; the D30's is
		// 1440 px, so this group asks for a 1440 px preview to measure the
		// embedded-JPEG path.
		{"raw-preview", []string{"raw/canon-eos-d30.crw"}, Options{PreviewSize: 1440}, simpleDcrawBase, noSharp},
		{"raw-libraw", []string{"raw/canon-eos-d30.crw", "raw/canon550d-magiclantern-14bit-uncompressed.dng"}, Options{}, dcrawEmuBase, noSharp},
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
			var sh *sharp
			if g.sharp != noSharp {
				sh = sharpBeside(b, g.sharp, e, paths, data, g.opt)
			}
			var (
				t       timed
				decoded time.Duration
			)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t.round(func() {
					for _, d := range data {
						if _, err := e.Process(context.Background(), d, g.opt); err != nil {
							b.Fatal(err)
						}
					}
				})
				t.sharpRound(b, sh)
				if g.name == "heic" {
					decoded += timedDecodes(b, data)
				}
			}
			rate := t.report(b, sh, b.N*len(data))
			if decoded > 0 {
				// What any libvips engine pays before its outputs: HEVC has
				// no shrink-on-load, so libheif decodes every pixel.
				b.ReportMetric(decoded.Seconds()/t.oursCPU.Seconds(), "decode_of_process_cpu")
			}
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

// BenchmarkHEICMemory makes the thumbnail and the preview of one HEIC in a
// fresh process, as a worker's first task would, and reports that
// process's peak resident memory and how much making them added to it
// (HEIC has no shrink-on-load, so the photo is decoded whole). The
// baseline in the same run is vipsthumbnail making the 2,048 px preview of
// the same file, one thread, its peak resident memory as the kernel counts
// it. The 200 MP file is over the default MAX_PIXELS; it runs with the
// limit raised, to show what a higher limit costs.
//
//	go test -run '^$' -bench BenchmarkHEICMemory -benchtime 1x ./imaging
func BenchmarkHEICMemory(b *testing.B) {
	if DefaultEngine != EngineVips {
		b.Skip("HEIC needs the libvips engine (a build with cgo)")
	}
	dir := testenv.Formats(b)
	for _, f := range []string{
		"heic/xiaomi-m2012k11ag-android-grid.heic",              // 5 MP
		"heic/iphone13pro-portrait-depthmap-p3.heic",            // 12 MP
		"heic/samsung-s24ultra-200mp-orientation6-gainmap.heic", // 200 MP
	} {
		path := filepath.Join(dir, f)
		b.Run(strings.TrimSuffix(filepath.Base(f), ".heic"), func(b *testing.B) {
			var peak, grew, base int64
			for range b.N {
				p, g := engineMemory(b, path)
				peak, grew = max(peak, p), max(grew, g)
				base = max(base, vipsthumbnailMemory(b, path))
			}
			const mib = 1 << 20
			b.ReportMetric(float64(peak)/mib, "peak_MiB")
			b.ReportMetric(float64(grew)/mib, "decode_MiB")
			b.ReportMetric(float64(base)/mib, "vipsthumbnail_peak_MiB")
			b.ReportMetric(float64(peak)/float64(base), "x_baseline")
		})
	}
}

// memoryChild names the file TestMemoryChild processes.
const memoryChild = "LIGHTBOX_MEMORY_CHILD"

// engineMemory runs TestMemoryChild on path in a fresh test process and
// returns its peak resident memory and the part the engine's work added.
func engineMemory(b *testing.B, path string) (peak, grew int64) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryChild$", "-test.v")
	cmd.Env = append(os.Environ(), memoryChild+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("%s: %v: %s", filepath.Base(path), err, out)
	}
	var before int64
	for line := range strings.Lines(string(out)) {
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "memory: peak %d before %d", &peak, &before); err == nil {
			return peak, peak - before
		}
	}
	b.Fatalf("%s: the child printed no figures: %s", filepath.Base(path), out)
	return 0, 0
}

// TestMemoryChild is BenchmarkHEICMemory's fresh process: it makes both
// sizes of the file memoryChild names and prints its peak resident
// memory, and what was resident before the work began.
func TestMemoryChild(t *testing.T) {
	path := os.Getenv(memoryChild)
	if path == "" {
		t.Skip("run by BenchmarkHEICMemory in a process of its own")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(EngineVips, Config{VipsConcurrency: 1, MaxPixels: 250_000_000})
	if err != nil {
		t.Fatal(err)
	}
	// Writing 5 to clear_refs resets the resident high-water mark: libvips
	// started and the file read are not the work's.
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
	before := procstat.Memory(os.Getpid(), "VmHWM")
	if _, err := e.Process(context.Background(), data, Options{}); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("memory: peak %d before %d\n", procstat.Memory(os.Getpid(), "VmHWM"), before)
}

// vipsthumbnailMemory is the peak resident memory of vipsthumbnail making
// the preview of path.
func vipsthumbnailMemory(b *testing.B, path string) int64 {
	b.Helper()
	bin, err := exec.LookPath("vipsthumbnail")
	if err != nil {
		b.Skip("vipsthumbnail is not installed (Debian: apt-get install libvips-tools)")
	}
	cmd := exec.Command(bin, path, "--size", fmt.Sprintf("%dx%d>", DefaultPreviewSize, DefaultPreviewSize),
		"-o", filepath.Join(b.TempDir(), fmt.Sprintf("%%s.jpg[Q=%d,strip]", DefaultPreviewQuality)))
	cmd.Env = append(os.Environ(), "VIPS_CONCURRENCY=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("vipsthumbnail %s: %v: %s", filepath.Base(path), err, out)
	}
	// Maxrss is in KiB on Linux.
	return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
}
