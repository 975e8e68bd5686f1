package imaging

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"lightbox/testsupport/procstat"
)

// sharp is the benchmarks' second baseline: Immich's engine, sharp
// (libvips in Node, with its own prebuilt libvips), making the same two
// outputs of the same files the way Immich makes them: one decode at the
// preview's size into raw pixels, both JPEGs encoded from those pixels.
// testdata/sharp/baseline.mjs does the work in one Node process started
// once, so its start-up is not counted; scripts/bench-deps.sh installs
// sharp there, as testdata/sharp/package-lock.json pins it.
type sharp struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
	// outputs holds each file's preview and thumbnail sizes, to check
	// that sharp makes what the engine makes.
	outputs [][4]int
}

const sharpDir = "testdata/sharp"

// sharpBuild is which sharp a baseline runs.
type sharpBuild int

const (
	noSharp sharpBuild = iota
	// npmSharp is sharp from npm with its own prebuilt libvips, as Immich
	// installs it. That libvips reads no HEVC, no JPEG XL and not the
	// 10-bit AVIF among the test files.
	npmSharp
	// systemSharp is sharp 0.31.3, the newest that accepts Debian 12's
	// libvips 8.14, built against it in systemSharpDir, for HEIC, AVIF
	// and JPEG XL: the same libheif and libjxl the engine decodes with.
	systemSharp
)

// systemSharpDir holds systemSharp, which baseline.mjs imports from there.
const systemSharpDir = "testdata/sharp-system"

// errNoSharp says how to install the baseline; benchmarks log it and go on
// without their x_sharp figure.
var errNoSharp = errors.New("sharp is not installed: run scripts/bench-deps.sh (`make bench` does), which needs Node.js 20 or newer with npm")

var errNoSystemSharp = errors.New("sharp built against the system's libvips is not installed: run scripts/bench-deps.sh (`make bench` does), which also needs libvips-dev, g++, make and Node.js' headers")

// sharpJPEG are the encoder settings closest to the engine's (encodeRGB):
// 4:2:0, baseline, no Huffman optimisation and none of mozjpeg's extras.
// sharp's own default optimises the Huffman tables, which costs it time
// the engine does not spend.
var sharpJPEG = map[string]any{
	"chromaSubsampling": "4:2:0", "optimiseCoding": false, "progressive": false,
	"mozjpeg": false, "trellisQuantisation": false, "overshootDeringing": false, "optimiseScans": false,
}

// startSharp starts the baseline on files with opt's sizes and qualities,
// and waits until it has made every file's outputs once. The process ends
// with the benchmark.
func startSharp(b *testing.B, build sharpBuild, files []string, opt Options) (*sharp, error) {
	opt = opt.withDefaults()
	if _, err := os.Stat(filepath.Join(sharpDir, "node_modules", "sharp", "package.json")); err != nil {
		return nil, errNoSharp
	}
	var module string
	if build == systemSharp {
		// The stamp is written once the build has succeeded.
		if _, err := os.Stat(filepath.Join(systemSharpDir, "node_modules", ".lightbox-installed")); err != nil {
			return nil, errNoSystemSharp
		}
		abs, err := filepath.Abs(filepath.Join(systemSharpDir, "node_modules", "sharp", "lib", "index.js"))
		if err != nil {
			return nil, err
		}
		module = abs
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errNoSharp
	}
	job, err := json.Marshal(map[string]any{
		"files":     files,
		"preview":   map[string]int{"size": opt.PreviewSize, "quality": opt.PreviewQuality},
		"thumbnail": map[string]int{"size": opt.ThumbSize, "quality": opt.ThumbQuality},
		"jpeg":      sharpJPEG,
	})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, "baseline.mjs")
	cmd.Dir = sharpDir
	// sharp runs each pipeline on libuv's pool: one thread there, and one
	// libvips thread (the script's sharp.concurrency(1)), as the engine.
	cmd.Env = append(os.Environ(), "UV_THREADPOOL_SIZE=1")
	if module != "" {
		cmd.Env = append(cmd.Env, "SHARP_MODULE="+module)
	}
	cmd.Stderr = os.Stderr
	s := &sharp{cmd: cmd}
	if s.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.out = bufio.NewScanner(stdout)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b.Cleanup(s.stop)
	var ready struct {
		Ready   bool     `json:"ready"`
		Outputs [][4]int `json:"outputs"`
	}
	if err := s.ask(job, &ready); err != nil {
		return nil, err
	}
	s.outputs = ready.Outputs
	return s, nil
}

// ask sends one line and decodes the answer into v.
func (s *sharp) ask(line []byte, v any) error {
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("sharp: %w", err)
	}
	if !s.out.Scan() {
		return fmt.Errorf("sharp exited: %v", s.out.Err())
	}
	var failed struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(s.out.Bytes(), &failed) == nil && failed.Error != "" {
		return errors.New("sharp: " + failed.Error)
	}
	return json.Unmarshal(s.out.Bytes(), v)
}

// round makes every file's outputs once.
func (s *sharp) round() error {
	var done struct {
		Seconds float64 `json:"seconds"`
	}
	return s.ask(nil, &done)
}

func (s *sharp) stop() {
	s.in.Close()
	s.cmd.Wait()
}

// sameOutputs fails the benchmark when sharp's outputs of a file are not
// the sizes of the engine's: the baseline must do the same work.
func (s *sharp) sameOutputs(b *testing.B, files []string, results []*Result) {
	b.Helper()
	for i, r := range results {
		want := [4]int{r.Preview.Width, r.Preview.Height, r.Thumbnail.Width, r.Thumbnail.Height}
		if s.outputs[i] != want {
			b.Fatalf("%s: sharp made %v (preview w, h, thumbnail w, h), the engine %v", filepath.Base(files[i]), s.outputs[i], want)
		}
	}
}

// sharpBeside starts the baseline on files for a benchmark of e, after
// making each file's outputs once with e too (a warm-up outside the clock,
// and the sizes sharp must match). It returns nil, saying why in the log,
// when sharp is missing or cannot read the files.
func sharpBeside(b *testing.B, build sharpBuild, e Engine, files []string, data [][]byte, opt Options) *sharp {
	b.Helper()
	results := make([]*Result, len(data))
	for i, d := range data {
		var err error
		if results[i], err = e.Process(context.Background(), d, opt); err != nil {
			b.Fatalf("%s: %v", filepath.Base(files[i]), err)
		}
	}
	s, err := startSharp(b, build, files, opt)
	if err != nil {
		b.Logf("no sharp baseline: %v", err)
		return nil
	}
	s.sameOutputs(b, files, results)
	return s
}

// timed adds up the engine's rounds and the baseline's, in wall and CPU
// time. CPU time moves less than wall time when other work shares the
// machine.
type timed struct {
	ours, oursCPU, theirs, theirsCPU time.Duration
}

// round times one round of the engine, fn.
func (t *timed) round(fn func()) {
	start, cpu := time.Now(), procstat.CPU(os.Getpid())
	fn()
	t.ours += time.Since(start)
	t.oursCPU += procstat.CPU(os.Getpid()) - cpu
}

// sharpRound runs one round of the baseline with the benchmark's clock
// stopped; nothing without a baseline.
func (t *timed) sharpRound(b *testing.B, s *sharp) {
	if s == nil {
		return
	}
	b.StopTimer()
	defer b.StartTimer()
	start, cpu := time.Now(), procstat.CPU(s.cmd.Process.Pid)
	if err := s.round(); err != nil {
		b.Fatal(err)
	}
	t.theirs += time.Since(start)
	t.theirsCPU += procstat.CPU(s.cmd.Process.Pid) - cpu
}

// report gives the engine's rate over n photos as photos/s, and with a
// baseline sharp's rate and the engine's over it, x_sharp, and the same
// ratio in CPU time, x_sharp_cpu.
func (t *timed) report(b *testing.B, s *sharp, n int) float64 {
	rate := float64(n) / t.ours.Seconds()
	b.ReportMetric(rate, "photos/s")
	if s == nil || t.theirs <= 0 {
		return rate
	}
	theirs := float64(n) / t.theirs.Seconds()
	b.ReportMetric(theirs, "sharp_photos/s")
	b.ReportMetric(rate/theirs, "x_sharp")
	if t.oursCPU > 0 {
		b.ReportMetric(t.theirsCPU.Seconds()/t.oursCPU.Seconds(), "x_sharp_cpu")
	}
	return rate
}
