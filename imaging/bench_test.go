package imaging

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The benchmarks process every file in photos/ per iteration and report
// photos/s beside two baselines measured in the same run on the same files,
// making the same two sizes (2048 px at quality 82 and 320 px at quality
// 80): the vipsthumbnail command (x_vipsthumbnail is engine rate / its
// rate) and sharp as Immich uses it (x_sharp, see sharp_bench_test.go).
// Every libvips side runs with one thread (VIPS_CONCURRENCY=1, as the
// worker configures the engine).

func benchPhotos(b *testing.B) [][]byte {
	_, data := benchFiles(b)
	return data
}

// benchFiles returns the corpus photos' paths and their bytes.
func benchFiles(b *testing.B) ([]string, [][]byte) {
	files, _ := filepath.Glob(filepath.Join(corpusDir(b), "photos", "*.jpg"))
	return files, readFiles(b, files)
}

func readFiles(b *testing.B, files []string) [][]byte {
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// vipsthumbnail runs the command over files, making both sizes of each.
func vipsthumbnail(files []string, out string) error {
	bin, err := exec.LookPath("vipsthumbnail")
	if err != nil {
		return err
	}
	sizes := []struct{ px, q int }{{DefaultPreviewSize, DefaultPreviewQuality}, {DefaultThumbSize, DefaultThumbQuality}}
	for _, f := range files {
		for _, s := range sizes {
			// "WxH>" only shrinks, like the engines.
			cmd := exec.Command(bin, f, "--size", fmt.Sprintf("%dx%d>", s.px, s.px),
				"-o", filepath.Join(out, fmt.Sprintf("%%s-%d.jpg[Q=%d,strip]", s.px, s.q)))
			cmd.Env = append(os.Environ(), "VIPS_CONCURRENCY=1")
			if msg, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("vipsthumbnail %s: %v: %s", f, err, msg)
			}
		}
	}
	return nil
}

var (
	baselineOnce sync.Once
	baselineRate float64 // photos/s
	baselineErr  error
)

// vipsthumbnailRate measures the baseline once per run, over two rounds.
func vipsthumbnailRate(b *testing.B) (float64, error) {
	baselineOnce.Do(func() {
		files, _ := filepath.Glob(filepath.Join(corpusDir(b), "photos", "*.jpg"))
		const rounds = 2
		start := time.Now()
		for r := 0; r < rounds; r++ {
			if baselineErr = vipsthumbnail(files, b.TempDir()); baselineErr != nil {
				return
			}
		}
		baselineRate = float64(rounds*len(files)) / time.Since(start).Seconds()
	})
	return baselineRate, baselineErr
}

func BenchmarkVipsthumbnail(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join(corpusDir(b), "photos", "*.jpg"))
	if _, err := exec.LookPath("vipsthumbnail"); err != nil {
		b.Skip("vipsthumbnail is not installed (Debian: apt-get install libvips-tools)")
	}
	out := b.TempDir()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := vipsthumbnail(files, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(files))/time.Since(start).Seconds(), "photos/s")
}

// BenchmarkProcess runs the engines over the corpus photos. The libvips
// engine's rounds alternate with sharp's, so a busy moment on a shared
// machine falls on both alike.
func BenchmarkProcess(b *testing.B) {
	files, photos := benchFiles(b)
	base, baseErr := vipsthumbnailRate(b)
	for _, name := range engineNames() {
		b.Run(name, func(b *testing.B) {
			e, err := New(name, Config{VipsConcurrency: 1})
			if err != nil {
				b.Fatal(err)
			}
			var sh *sharp
			if name == EngineVips {
				sh = sharpBeside(b, npmSharp, e, files, photos, Options{})
			}
			var t timed
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t.round(func() {
					for _, data := range photos {
						if _, err := e.Process(context.Background(), data, Options{}); err != nil {
							b.Fatal(err)
						}
					}
				})
				t.sharpRound(b, sh)
			}
			rate := t.report(b, sh, b.N*len(photos))
			if baseErr == nil {
				b.ReportMetric(base, "vipsthumbnail_photos/s")
				b.ReportMetric(rate/base, "x_vipsthumbnail")
			} else {
				b.Logf("no vipsthumbnail baseline: %v", baseErr)
			}
		})
	}
}
