package embedding

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nfnt/resize"
)

// photos decodes the corpus photos at thumbnail size, as the worker passes
// them. The corpus is $LIGHTBOX_CORPUS or ../../shared/corpus.
//
// Under -race it takes the three smallest photos only. Decoding and
// resampling are pixel arithmetic on data no other goroutine sees, which
// the detector has nothing to find in and slows twentyfold (three minutes
// of a busy two-core run); `make test` runs this package without -race,
// on every photo (NORACE_PKG in the Makefile).
func photos(t *testing.T) map[string]image.Image {
	t.Helper()
	dir := os.Getenv("LIGHTBOX_CORPUS")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", "shared", "corpus")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "photos", "*.jpg"))
	if len(files) == 0 {
		t.Skipf("test corpus not found at %s (set LIGHTBOX_CORPUS)", dir)
	}
	if raceDetector {
		files = smallest(t, files, 3)
	}
	out := map[string]image.Image{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = resize.Thumbnail(320, 320, img, resize.Lanczos3)
	}
	return out
}

// smallest returns the n smallest of files.
func smallest(t *testing.T, files []string, n int) []string {
	t.Helper()
	size := map[string]int64{}
	for _, f := range files {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		size[f] = info.Size()
	}
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b string) int { return cmp.Compare(size[a], size[b]) })
	return files[:min(n, len(files))]
}

func mustEmbed(t *testing.T, e Embedder, img image.Image) []float32 {
	t.Helper()
	v, err := e.Embed(context.Background(), img)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != e.Dim() {
		t.Fatalf("vector of %d, Dim says %d", len(v), e.Dim())
	}
	if n := Cosine(v, v); math.Abs(n-1) > 1e-5 {
		t.Fatalf("vector is not unit length: |v|² = %v", n)
	}
	return v
}

// recompress makes the kind of copy a duplicate is: smaller, recompressed.
func recompress(t *testing.T, img image.Image) image.Image {
	t.Helper()
	var buf bytes.Buffer
	small := resize.Resize(uint(img.Bounds().Dx()/2), 0, img, resize.Bilinear)
	if err := jpeg.Encode(&buf, small, &jpeg.Options{Quality: 40}); err != nil {
		t.Fatal(err)
	}
	out, err := jpeg.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBuiltin(t *testing.T) {
	var b Builtin
	if b.Model() != "builtin-descriptor-v1" || b.Dim() != 80 {
		t.Fatalf("model %q dim %d", b.Model(), b.Dim())
	}
	imgs := photos(t)
	vecs := map[string][]float32{}
	for name, img := range imgs {
		vecs[name] = mustEmbed(t, b, img)
		if again := mustEmbed(t, b, img); !equal(again, vecs[name]) {
			t.Errorf("%s: two runs gave different vectors", name)
		}
	}
	// A recompressed copy must be closer to its original than any other photo.
	var worstCopy, bestOther float64 = 1, -1
	for name, img := range imgs {
		c := Cosine(vecs[name], mustEmbed(t, b, recompress(t, img)))
		worstCopy = min(worstCopy, c)
		for other, v := range vecs {
			if other == name {
				continue
			}
			o := Cosine(vecs[name], v)
			bestOther = max(bestOther, o)
			if o >= c {
				t.Errorf("%s: its copy scores %.3f but %s scores %.3f", name, c, other, o)
			}
		}
	}
	t.Logf("copies: cosine ≥ %.3f; different photos: cosine ≤ %.3f", worstCopy, bestOther)
}

func equal(a, b []float32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestBuiltinFlatImages(t *testing.T) {
	for _, c := range []color.Color{color.Black, color.White, color.Gray{119}, color.RGBA{200, 30, 30, 255}} {
		img := image.NewUniform(c)
		v := mustEmbed(t, Builtin{}, &bounded{img, image.Rect(0, 0, 10, 10)})
		if len(v) != 80 {
			t.Errorf("%v: %d values", c, len(v))
		}
	}
	if _, err := (Builtin{}).Embed(context.Background(), image.NewRGBA(image.Rectangle{})); err == nil {
		t.Error("an empty image got a vector")
	}
}

type bounded struct {
	image.Image
	r image.Rectangle
}

func (b *bounded) Bounds() image.Rectangle { return b.r }

func TestCosine(t *testing.T) {
	for _, tc := range []struct {
		a, b []float32
		want float64
	}{
		{[]float32{1, 2, 3}, []float32{2, 4, 6}, 1},
		{[]float32{1, 0}, []float32{-1, 0}, -1},
		{[]float32{1, 0}, []float32{0, 5}, 0},
		{[]float32{1, 0}, []float32{1, 0, 0}, 0},
		{[]float32{0, 0}, []float32{1, 0}, 0},
	} {
		if got := Cosine(tc.a, tc.b); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Cosine(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// embedServer answers like an embedding service; handle decides per request.
func embedServer(t *testing.T, handle func(w http.ResponseWriter, req httpRequest, img image.Image)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req httpRequest
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want a JSON POST", http.StatusBadRequest)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		raw, err := base64.StdEncoding.DecodeString(req.Image)
		if err != nil {
			http.Error(w, "image is not base64", http.StatusBadRequest)
			return
		}
		img, err := jpeg.Decode(bytes.NewReader(raw))
		if err != nil {
			http.Error(w, "image is not a JPEG", http.StatusBadRequest)
			return
		}
		if r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		handle(w, req, img)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newTestHTTP(t *testing.T, url string, timeout time.Duration) *HTTP {
	t.Helper()
	h, err := NewHTTP(HTTPConfig{URL: url, Model: "clip-test", Dim: 3, Timeout: timeout, Header: http.Header{"Authorization": {"Bearer k"}}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func testImage() image.Image {
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for i := range img.Pix {
		img.Pix[i] = uint8(i)
	}
	return img
}

func TestHTTPEmbed(t *testing.T) {
	srv := embedServer(t, func(w http.ResponseWriter, req httpRequest, img image.Image) {
		if req.Model != "clip-test" || img.Bounds().Dx() != 40 || img.Bounds().Dy() != 30 {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"embedding": [3, 0, 4]}`))
	})
	h := newTestHTTP(t, srv.URL, 0)
	if h.Model() != "clip-test" || h.Dim() != 3 {
		t.Errorf("model %q dim %d", h.Model(), h.Dim())
	}
	v := mustEmbed(t, h, testImage())
	if math.Abs(float64(v[0])-0.6) > 1e-6 || v[1] != 0 || math.Abs(float64(v[2])-0.8) > 1e-6 {
		t.Errorf("got %v, want [0.6 0 0.8]", v)
	}
}

func TestHTTPErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		check  func(t *testing.T, err error)
	}{
		{"rate limited", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		}, func(t *testing.T, err error) {
			var rl *RateLimitedError
			if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
				t.Errorf("got %v, want RateLimitedError after 7s", err)
			}
		}},
		{"rate limited until a date", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
		}, func(t *testing.T, err error) {
			var rl *RateLimitedError
			if !errors.As(err, &rl) || rl.RetryAfter < 85*time.Second || rl.RetryAfter > 90*time.Second {
				t.Errorf("got %v, want RateLimitedError after about 90s", err)
			}
		}},
		{"server error", func(w http.ResponseWriter) {
			http.Error(w, "model not loaded", http.StatusServiceUnavailable)
		}, func(t *testing.T, err error) {
			var se *StatusError
			var rl *RateLimitedError
			if !errors.As(err, &se) || se.StatusCode != 503 || !strings.Contains(se.Body, "model not loaded") || errors.As(err, &rl) {
				t.Errorf("got %v, want StatusError 503", err)
			}
		}},
		{"wrong length", func(w http.ResponseWriter) {
			w.Write([]byte(`{"embedding": [1, 2]}`))
		}, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "2 numbers, want 3") {
				t.Errorf("got %v", err)
			}
		}},
		{"not JSON", func(w http.ResponseWriter) {
			w.Write([]byte(`<html>`))
		}, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "not {\"embedding\"") {
				t.Errorf("got %v", err)
			}
		}},
		{"zero vector", func(w http.ResponseWriter) {
			w.Write([]byte(`{"embedding": [0, 0, 0]}`))
		}, func(t *testing.T, err error) {
			if err == nil {
				t.Error("a zero vector was accepted")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := embedServer(t, func(w http.ResponseWriter, _ httpRequest, _ image.Image) { tc.answer(w) })
			_, err := newTestHTTP(t, srv.URL, 0).Embed(context.Background(), testImage())
			tc.check(t, err)
		})
	}
}

func TestHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := embedServer(t, func(w http.ResponseWriter, _ httpRequest, _ image.Image) {
		<-release // answer only once the test is over
	})
	defer close(release)
	_, err := newTestHTTP(t, srv.URL, 200*time.Millisecond).Embed(context.Background(), testImage())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want a deadline error", err)
	}
}

func TestNewHTTPNeedsConfig(t *testing.T) {
	if _, err := NewHTTP(HTTPConfig{URL: "http://127.0.0.1:1/", Model: "m"}); err == nil {
		t.Error("NewHTTP accepted a config without a dimension")
	}
}

func TestHTTPEmbedText(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req httpRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "clip-test" || req.Image != "" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		switch req.Text {
		case "red barn":
			w.Write([]byte(`{"embedding": [0, 3, 4]}`))
		case "overloaded":
			http.Error(w, "busy", http.StatusInternalServerError)
		default:
			w.Write([]byte(`{"embedding": [1]}`))
		}
	}))
	t.Cleanup(srv.Close)
	h := newTestHTTP(t, srv.URL, 0)
	var _ TextEmbedder = h
	v, err := h.EmbedText(context.Background(), "red barn")
	if err != nil || v[0] != 0 || math.Abs(float64(v[1])-0.6) > 1e-6 || math.Abs(float64(v[2])-0.8) > 1e-6 {
		t.Errorf("got %v, %v; want [0 0.6 0.8]", v, err)
	}
	var se *StatusError
	if _, err := h.EmbedText(context.Background(), "overloaded"); !errors.As(err, &se) || se.StatusCode != 500 {
		t.Errorf("got %v, want StatusError 500", err)
	}
	if _, err := h.EmbedText(context.Background(), "anything else"); err == nil || !strings.Contains(err.Error(), "1 numbers, want 3") {
		t.Errorf("got %v, want a length error", err)
	}
	if _, err := h.EmbedText(context.Background(), ""); err == nil {
		t.Error("empty text was sent")
	}
}
