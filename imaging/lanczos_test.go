//go:build cgo

package imaging

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/davidbyttow/govips/v2/vips"
)

// TestLanczosShufflesLayOutTheSame resamples the same pixels across with
// the horizontal pass's byte shuffles and without them, on widths around
// where the shuffles stop short of a row's end and groups of rows cut
// short: the results must be the same bytes.
func TestLanczosShufflesLayOutTheSame(t *testing.T) {
	if !lanczosShuffles(true) {
		t.Skip("this CPU has no SSSE3: only the plain layout runs")
	}
	defer lanczosShuffles(true)
	for _, w := range []int{1, 2, 5, 6, 7, 11, 64, 101, 4000} {
		for _, h := range []int{1, 3, 4, 9} {
			for _, ow := range []int{max(1, w/2), max(1, w*2/3), w + 3} {
				pix := make([]byte, 3*w*h)
				for i := range pix {
					pix[i] = byte(i*7919>>3 + i/3)
				}
				lanczosShuffles(true)
				with, err := lanczosRGB(bytes.Clone(pix), w, h, ow, h, 0)
				if err != nil {
					t.Fatal(err)
				}
				lanczosShuffles(false)
				without, err := lanczosRGB(bytes.Clone(pix), w, h, ow, h, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(with, without) {
					t.Errorf("%dx%d to %d wide: the shuffles give other bytes", w, h, ow)
				}
			}
		}
	}
}

// TestLanczosRGB checks the vectorised passes against Lanczos3 worked out
// per sample in float64: every sample within one level, on sizes that
// leave the last group of rows short, with shrinks from barely one to
// nearly four, on sharp edges as well as gradients.
func TestLanczosRGB(t *testing.T) {
	for _, tc := range []struct {
		w, h, ow, oh int
		shrink       float64
	}{
		{37, 23, 17, 23, 37.0 / 17},   // across, 23 rows: the last group of four is short
		{23, 37, 23, 11, 37.0 / 11},   // down
		{101, 9, 100, 9, 1.01},        // barely shrunk
		{400, 6, 103, 6, 400.0 / 103}, // nearly four
		{64, 50, 33, 26, 64.0 / 33},   // both axes
		{65, 50, 33, 26, 0},           // both axes, each by its own ratio
		{50, 70, 29, 70, 1.75},        // a size rounded from the shrink: a fraction over
		{5, 3, 1, 3, 5},               // to one column
		{300, 200, 154, 200, 300.0 / 154},
	} {
		t.Run(fmt.Sprintf("%dx%d-%dx%d", tc.w, tc.h, tc.ow, tc.oh), func(t *testing.T) {
			pix := make([]byte, 3*tc.w*tc.h)
			for y := range tc.h {
				for x := range tc.w {
					i := 3 * (y*tc.w + x)
					pix[i] = byte(x * 255 / max(1, tc.w-1))   // gradient
					pix[i+1] = byte(255 * ((x/3 + y/2) % 2))  // hard edges
					pix[i+2] = byte((x*7919 + y*104729) >> 3) // noise
				}
			}
			got, err := lanczosRGB(bytes.Clone(pix), tc.w, tc.h, tc.ow, tc.oh, tc.shrink)
			if err != nil {
				t.Fatal(err)
			}
			vs, hs := tc.shrink, tc.shrink
			if tc.shrink == 0 {
				vs, hs = float64(tc.h)/float64(tc.oh), float64(tc.w)/float64(tc.ow)
			}
			want := lanczosReference(lanczosReference(pix, tc.w, tc.h, tc.w, tc.oh, vs), tc.w, tc.oh, tc.ow, tc.oh, hs)
			if len(got) != len(want) {
				t.Fatalf("%d bytes, want %d", len(got), len(want))
			}
			for i := range want {
				if d := int(got[i]) - int(want[i]); d < -1 || d > 1 {
					p := i / 3
					t.Fatalf("pixel (%d,%d) band %d = %d, want %d", p%tc.ow, p/tc.ow, i%3, got[i], want[i])
				}
			}
		})
	}
}

// lanczosReference resamples one axis at a time (whichever differs) the
// slow way: each output sample's window, weights and sum in float64.
func lanczosReference(pix []byte, w, h, ow, oh int, scale float64) []byte {
	if ow != w {
		return transposeRGB(lanczosReference(transposeRGB(pix, w, h), h, w, oh, ow, scale), h, ow)
	}
	if oh == h {
		return pix
	}
	out := make([]byte, 3*w*oh)
	fs := max(scale, 1)
	support := 3 * fs
	for y := range oh {
		centre := (float64(y)+0.5)*scale + (float64(h)-float64(oh)*scale)/2
		a, b := int(math.Floor(centre-support+0.5)), int(math.Floor(centre+support+0.5))
		var sum float64
		weights := make([]float64, b-a)
		for i := a; i < b; i++ {
			x := (float64(i) - centre + 0.5) / fs
			wt := 1.0
			if x != 0 {
				wt = 3 * math.Sin(math.Pi*x) * math.Sin(math.Pi*x/3) / (math.Pi * math.Pi * x * x)
			}
			if x <= -3 || x >= 3 {
				wt = 0
			}
			weights[i-a] = wt
			sum += wt
		}
		for s := range 3 * w {
			var v float64
			for i := a; i < b; i++ {
				v += weights[i-a] / sum * float64(pix[min(h-1, max(0, i))*3*w+s]) // the edge repeats
			}
			out[y*3*w+s] = byte(math.Round(min(255, max(0, v))))
		}
	}
	return out
}

// transposeRGB swaps rows and columns of packed 3-band pixels.
func transposeRGB(pix []byte, w, h int) []byte {
	out := make([]byte, len(pix))
	for y := range h {
		for x := range w {
			copy(out[3*(x*h+y):3*(x*h+y)+3], pix[3*(y*w+x):3*(y*w+x)+3])
		}
	}
	return out
}

// TestPreviewLikeLibvips checks that a preview libvips shrinks in height
// and lanczosRGB across is the size libvips' thumbnail gives and looks the
// same to within JPEG noise: in every orientation (a mistake in which axis
// is whose would change the size or scramble the picture), through colour
// profiles, CMYK, grey and 10-bit, and from phone HEICs whose decoder
// turns them itself.
func TestPreviewLikeLibvips(t *testing.T) {
	libvips(t, "the split preview is the libvips engine's")
	cfg := Config{}.withDefaults()
	// minDB is how close to libvips' own preview an input's must be. The
	// 70×50 test pictures are a few hard-edged blocks, where the short axis
	// gives the difference away: libvips shrinks it by the exact ratio of
	// the sizes when it makes only that axis, by the long axis' ratio when
	// it makes both, which moves an edge by a fraction of a pixel.
	type input struct {
		file  string
		size  int
		minDB float64
		read  func(testing.TB, string) []byte
	}
	var inputs []input
	photos := []string{"blinds.jpg", "dune.jpg", "storm.jpg", "bythewater-2560x1600.jpg",
		"elephants-3840x2160-progressive.jpg", "kleiber-6028x3391.jpg"}
	if raceDetector {
		// The pass without -race compares every photo; the split path's
		// resampling is pixel arithmetic no other goroutine sees, so one
		// photo covers it here rather than the same work twice.
		photos = []string{"bythewater-2560x1600.jpg"}
	}
	for _, f := range photos {
		inputs = append(inputs, input{filepath.Join("photos", f), 1000, 38, readCorpus}, input{filepath.Join("photos", f), 2048, 38, readCorpus})
	}
	for n := 1; n <= 8; n++ {
		inputs = append(inputs, input{filepath.Join("odd", "orientation-"+strconv.Itoa(n)+".jpg"), 40, 30, readCorpus})
	}
	inputs = append(inputs, input{"odd/cmyk.jpg", 100, 30, readCorpus}, input{"odd/grayscale.jpg", 100, 30, readCorpus},
		input{"icc/cmyk-swop-icc.jpg", 500, 38, readFormat}, input{"icc/iphone13mini-displayp3-gainmap.jpg", 300, 38, readFormat},
		input{"heic/iphone8plus-grid-orientation6-p3.heic", 2048, 38, readFormat},
		input{"heic/iphone13pro-portrait-depthmap-p3.heic", 2048, 38, readFormat},
		input{"heic/sony-a7siii-camera-10bit.hif", 2048, 38, readFormat},
		input{"avif/sofa-grid1x5-420.avif", 600, 38, readFormat},
		input{"jxl/bicycles-codestream.jxl", 600, 38, readFormat}, input{"jxl/isobmff-container.jxl", 400, 38, readFormat})
	for _, in := range inputs {
		t.Run(fmt.Sprintf("%s@%d", in.file, in.size), func(t *testing.T) {
			data := in.read(t, in.file)
			h, err := inspectFor(data, cfg, &vipsEngine{cfg: cfg})
			if err != nil {
				t.Fatal(err)
			}
			opt := Options{PreviewSize: in.size}.withDefaults()
			_, fw, _, _, err := loadPreview(data, h, opt)
			if err != nil {
				t.Fatal(err)
			}
			// Every image libvips would not shrink on load takes the split path.
			long := max(h.width, h.height)
			if split := long > in.size && long < 4*in.size; (fw != 0) != split {
				t.Fatalf("split path taken: %v, want %v", fw != 0, split)
			}
			got, w, ht, err := previewPixels(data, h, 1, opt)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := vips.LoadThumbnailFromBuffer(data, in.size, in.size, vips.InterestingNone, vips.SizeDown, importParams())
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			if err := toOpaqueSRGB(ref); err != nil {
				t.Fatal(err)
			}
			want, err := ref.ToBytes()
			if err != nil {
				t.Fatal(err)
			}
			if w != ref.Width() || ht != ref.Height() {
				t.Fatalf("preview %d×%d, libvips' thumbnail %d×%d", w, ht, ref.Width(), ref.Height())
			}
			if psnr := psnrRGB(got, want, w, ht); psnr < in.minDB {
				t.Errorf("preview %.1f dB from libvips' own (want %.0f or more)", psnr, in.minDB)
			}
			// JPEGs libvips would only decode and resize take libjpeg-turbo
			// directly (scaled in the DCT from twice the size): the same
			// picture, within the same noise.
			if h.format != JPEG {
				return
			}
			meta, _ := readMetadata(context.Background(), h)
			direct, dw, dh, release, ok := jpegPreview(data, h, meta.Orientation, opt)
			wantDirect := !strings.Contains(in.file, "cmyk") && !strings.Contains(in.file, "displayp3") && long < 4*in.size
			if ok != wantDirect {
				t.Fatalf("decoded by libjpeg-turbo directly: %v, want %v", ok, wantDirect)
			}
			if !ok {
				return
			}
			defer release()
			if dw != w || dh != ht {
				t.Fatalf("direct preview %d×%d, libvips' thumbnail %d×%d", dw, dh, w, ht)
			}
			if psnr := psnrRGB(direct, want, w, ht); psnr < in.minDB {
				t.Errorf("direct preview %.1f dB from libvips' own (want %.0f or more)", psnr, in.minDB)
			}
		})
	}
}

// psnrRGB is how close two w×h packed RGB images are, in dB.
func psnrRGB(a, b []byte, w, h int) float64 {
	var se float64
	for i := range 3 * w * h {
		d := float64(a[i]) - float64(b[i])
		se += d * d
	}
	return 10 * math.Log10(255*255/max(se/float64(3*w*h), 1e-9))
}

// BenchmarkPreviewSplit makes the preview's pixels of each corpus photo
// the split path takes (libvips shrinks the height, lanczosRGB across)
// beside libvips' thumbnail making them alone, from the same files, one
// libvips thread each, alternating photo by photo.
func BenchmarkPreviewSplit(b *testing.B) {
	// Starts libvips on one thread, as the worker does, if nothing has yet.
	if _, err := New(EngineVips, Config{VipsConcurrency: 1}); err != nil {
		b.Fatal(err)
	}
	cfg := Config{}.withDefaults()
	opt := Options{}.withDefaults()
	type photo struct {
		data []byte
		h    header
	}
	var photos []photo
	for _, data := range benchPhotos(b) {
		h, err := inspect(data, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if long := max(h.width, h.height); long > opt.PreviewSize && long < 4*opt.PreviewSize {
			photos = append(photos, photo{data, h})
		}
	}
	if len(photos) == 0 {
		b.Skip("no corpus photo takes the split path")
	}
	var ours, theirs time.Duration
	for b.Loop() {
		for _, p := range photos {
			start := time.Now()
			if _, _, _, err := previewPixels(p.data, p.h, 1, opt); err != nil {
				b.Fatal(err)
			}
			ours += time.Since(start)
			start = time.Now()
			ref, err := vips.LoadThumbnailFromBuffer(p.data, opt.PreviewSize, opt.PreviewSize, vips.InterestingNone, vips.SizeDown, importParams())
			if err == nil {
				if err = toOpaqueSRGB(ref); err == nil {
					_, err = ref.ToBytes()
				}
				ref.Close()
			}
			if err != nil {
				b.Fatal(err)
			}
			theirs += time.Since(start)
		}
	}
	n := float64(b.N * len(photos))
	b.ReportMetric(ours.Seconds()*1000/n, "ms/photo")
	b.ReportMetric(theirs.Seconds()*1000/n, "libvips_ms/photo")
	b.ReportMetric(theirs.Seconds()/ours.Seconds(), "x_libvips")
}
