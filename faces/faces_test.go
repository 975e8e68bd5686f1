package faces_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/image/draw"

	"lightbox/faces"
	"lightbox/testsupport/testenv"
)

// demo is the six group photos and the faces each holds, counted by eye.
var demo = []struct {
	name  string
	faces int
}{
	{"sample1.jpg", 3}, {"sample2.jpg", 3}, {"sample3.jpg", 3},
	{"sample4.jpg", 4}, {"sample5.jpg", 5}, {"sample6.jpg", 4},
}

func readDemo(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.FaceDemo(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func provider(t *testing.T, url, secret string, timeout time.Duration) *faces.HTTP {
	t.Helper()
	p, err := faces.NewHTTP(faces.HTTPConfig{URL: url, Secret: secret, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func decodeJPEG(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func encodeJPEG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// blurred is img shrunk to a quarter and enlarged back: about what a
// missed focus looks like at preview size.
func blurred(img image.Image) image.Image {
	b := img.Bounds()
	small := image.NewRGBA(image.Rect(0, 0, b.Dx()/4, b.Dy()/4))
	draw.BiLinear.Scale(small, small.Bounds(), img, b, draw.Src, nil)
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.BiLinear.Scale(out, out.Bounds(), small, small.Bounds(), draw.Src, nil)
	return out
}

func TestHTTPOnTheDemoPhotos(t *testing.T) {
	svc := testenv.StartFaces(t, "ML_WORKERS=2")
	p := provider(t, svc.Endpoint(), svc.Secret, 0)
	t.Run("finds at least 20 of the 22 faces", func(t *testing.T) { findsTheFaces(t, p) })
	// The faces of these two are all found on the whole frame, which is
	// what they compare: tiles would only take longer.
	whole := provider(t, svc.Endpoint()+"?tiles=off", svc.Secret, 0)
	t.Run("a sharp face measures sharper than its blurred copy", func(t *testing.T) { sharpOverBlurred(t, whole) })
	t.Run("decoded pixels find the faces the JPEG does", func(t *testing.T) { pixelsAsJPEG(t, whole) })
}

// both runs f and g at once, one per detection thread.
func both(f, g func()) {
	var wg sync.WaitGroup
	wg.Go(f)
	g()
	wg.Wait()
}

func pixelsAsJPEG(t *testing.T, p *faces.HTTP) {
	data := readDemo(t, "sample4.jpg")
	img := decodeJPEG(t, data)
	// A sub-image, as a crop would be: its pixels start elsewhere in memory.
	sub := image.NewRGBA(image.Rect(-5, -7, img.Bounds().Dx()+5, img.Bounds().Dy()+7))
	draw.Draw(sub, img.Bounds(), img, image.Point{}, draw.Src)
	for _, src := range []image.Image{img, sub.SubImage(img.Bounds())} {
		var a, b faces.Result
		var errA, errB error
		both(func() { a, errA = p.Detect(context.Background(), data) },
			func() { b, errB = p.DetectImage(context.Background(), src) })
		if err := cmp.Or(errA, errB); err != nil {
			t.Fatal(err)
		}
		if b.Width != a.Width || b.Height != a.Height || len(b.Faces) != 4 || len(a.Faces) != 4 {
			t.Fatalf("JPEG %d×%d, %d faces; pixels %d×%d, %d faces", a.Width, a.Height, len(a.Faces), b.Width, b.Height, len(b.Faces))
		}
		// Go and the sidecar decode a JPEG a little differently, so the
		// boxes differ a little.
		for i := range a.Faces {
			if o := iou(a.Faces[i].Box, b.Faces[i].Box); o < 0.8 {
				t.Errorf("face %d: boxes %+v and %+v overlap by %.2f", i, a.Faces[i].Box, b.Faces[i].Box, o)
			}
		}
	}
}

func findsTheFaces(t *testing.T, p faces.Provider) {
	results := make([]faces.Result, len(demo))
	errs := make([]error, len(demo))
	var wg sync.WaitGroup
	for i, d := range demo {
		data := readDemo(t, d.name)
		wg.Go(func() { results[i], errs[i] = p.Detect(context.Background(), data) })
	}
	wg.Wait()
	found, want := 0, 0
	var counts []string
	for i, d := range demo {
		res, err := results[i], errs[i]
		if err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		img := decodeJPEG(t, readDemo(t, d.name))
		if res.Width != img.Bounds().Dx() || res.Height != img.Bounds().Dy() {
			t.Errorf("%s: the provider read %d×%d, the JPEG is %v", d.name, res.Width, res.Height, img.Bounds().Size())
		}
		if !strings.Contains(res.Model, "blazeface") || res.Tiles == 0 {
			t.Errorf("%s: model %q, tiles %d", d.name, res.Model, res.Tiles)
		}
		if len(res.Faces) > d.faces {
			t.Errorf("%s: %d faces where there are %d", d.name, len(res.Faces), d.faces)
		}
		for j, f := range res.Faces {
			if f.Landmarks == nil || f.EyeOpenness == nil || f.HeadAngles == nil {
				t.Errorf("%s face %d lacks its mesh measures: %+v", d.name, j, f)
			}
		}
		found += min(len(res.Faces), d.faces)
		want += d.faces
		counts = append(counts, fmt.Sprintf("%s %d/%d", d.name, len(res.Faces), d.faces))
	}
	if want != 22 || found < 20 {
		t.Fatalf("found %d of %d faces: %s", found, want, strings.Join(counts, ", "))
	}
	t.Logf("found %d of %d faces: %s", found, want, strings.Join(counts, ", "))
}

func sharpOverBlurred(t *testing.T, p faces.Provider) {
	data := readDemo(t, "sample6.jpg")
	sharp := decodeJPEG(t, data)
	soft := blurred(sharp)
	softJPEG := encodeJPEG(t, soft)
	var a, b faces.Result
	var errA, errB error
	both(func() { a, errA = p.Detect(context.Background(), data) },
		func() { b, errB = p.Detect(context.Background(), softJPEG) })
	if err := cmp.Or(errA, errB); err != nil {
		t.Fatal(err)
	}
	matched := 0
	for i, f := range a.Faces {
		for _, g := range b.Faces {
			if iou(f.Box, g.Box) < 0.5 {
				continue
			}
			matched++
			s, bl := faces.Sharpness(sharp, f.Box), faces.Sharpness(soft, g.Box)
			t.Logf("face %d: sharpness %.1f, blurred %.1f", i, s, bl)
			if s <= 2*bl {
				t.Errorf("face %d: sharpness %.1f is not well above its blurred copy's %.1f", i, s, bl)
			}
		}
	}
	if len(a.Faces) != 4 || matched < 3 {
		t.Fatalf("%d faces in the photo, %d found again in the blurred copy", len(a.Faces), matched)
	}
}

func iou(a, b faces.Box) float64 {
	x0, y0 := max(a.X, b.X), max(a.Y, b.Y)
	x1, y1 := min(a.X+a.W, b.X+b.W), min(a.Y+a.H, b.Y+b.H)
	if x1 <= x0 || y1 <= y0 {
		return 0
	}
	in := (x1 - x0) * (y1 - y0)
	return in / (a.W*a.H + b.W*b.H - in)
}

func TestHTTPErrors(t *testing.T) {
	svc := testenv.StartFaces(t, "ML_WORKERS=1")
	p := provider(t, svc.Endpoint(), svc.Secret, 0)
	ctx := context.Background()

	_, err := p.Detect(ctx, []byte("<html>not a photo</html>"))
	var se *faces.StatusError
	if !errors.As(err, &se) || !se.BadImage() || se.Code != "bad_image" || errors.Is(err, faces.ErrUnavailable) {
		t.Fatalf("not a JPEG: %v", err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Detect(cancelled, readDemo(t, "sample1.jpg")); !errors.Is(err, context.Canceled) || errors.Is(err, faces.ErrUnavailable) {
		t.Fatalf("cancelled by the caller: %v", err)
	}

	// A provider that does not answer in time is an outage.
	quick := provider(t, svc.Endpoint(), svc.Secret, time.Millisecond)
	if _, err := quick.Detect(ctx, readDemo(t, "sample1.jpg")); !errors.Is(err, faces.ErrUnavailable) {
		t.Fatalf("timed out: %v", err)
	}

	// Down, as when it crashed: an outage, not a failure of the image.
	svc.Kill()
	_, err = p.Detect(ctx, readDemo(t, "sample1.jpg"))
	var ue *faces.UnavailableError
	if !errors.Is(err, faces.ErrUnavailable) || !errors.As(err, &ue) || errors.As(err, &se) {
		t.Fatalf("sidecar down: %v", err)
	}
}

// TestHTTPRefusesWithoutTheSecret: a caller without the sidecar's secret is
// refused with 401 before its photo is read, which the client reports as
// an outage to wait out (the secrets are set wrong), never as a bad photo.
func TestHTTPRefusesWithoutTheSecret(t *testing.T) {
	svc := testenv.StartFaces(t, "ML_WORKERS=1")
	ctx := context.Background()
	data := readDemo(t, "sample1.jpg")
	img := decodeJPEG(t, data)
	for _, secret := range []string{"", strings.Repeat("x", len(svc.Secret)), svc.Secret[1:], svc.Secret + "x"} {
		p := provider(t, svc.Endpoint(), secret, 0)
		_, errJPEG := p.Detect(ctx, data)
		_, errPixels := p.DetectImage(ctx, img)
		for _, err := range []error{errJPEG, errPixels} {
			var se *faces.StatusError
			if !errors.Is(err, faces.ErrUnavailable) || !errors.As(err, &se) || se.StatusCode != 401 || se.Code != "unauthorized" || se.BadImage() {
				t.Errorf("secret %q: %v", secret, err)
			}
		}
	}
	if _, err := provider(t, svc.Endpoint(), svc.Secret, 0).Detect(ctx, data); err != nil {
		t.Fatalf("with the secret: %v", err)
	}
}

// busy is how many of svc's detection threads are working.
func busy(t *testing.T, svc *testenv.FaceService) int {
	t.Helper()
	resp, err := http.Get(svc.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct{ Busy int }
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h.Busy
}

// enlarged is the demo photo name scaled to w×h pixels, as a JPEG: a photo
// that keeps a detection thread for seconds.
func enlarged(t *testing.T, name string, w, h int) []byte {
	t.Helper()
	src := decodeJPEG(t, readDemo(t, name))
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.BiLinear.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
	return encodeJPEG(t, dst)
}

func TestHTTPBusyIsUnavailableWithRetryAfter(t *testing.T) {
	svc := testenv.StartFaces(t, "ML_WORKERS=1", "ML_QUEUE=0", "ML_TIMEOUT_MS=600000")
	p := provider(t, svc.Endpoint(), svc.Secret, 0)
	ctx := context.Background()
	photo := readDemo(t, "sample3.jpg")
	slow := enlarged(t, "sample3.jpg", 4000, 3000)

	// A 12 MP photo searched in tiles holds the only place while the
	// thread works on it; one that ends before the next request arrives
	// (a machine too fast) is sent again.
	var err error
	var ue *faces.UnavailableError
	testenv.Eventually(t, "a photo refused as busy while the slow one holds the only place", 3*time.Minute, func() bool {
		done := make(chan error, 1)
		go func() {
			_, err := p.Detect(ctx, slow)
			done <- err
		}()
		testenv.EventuallyEvery(t, "the slow photo to take the only place, or to end", 3*time.Minute, 10*time.Millisecond, func() bool {
			select {
			case e := <-done:
				done <- e
				return true
			default:
				return busy(t, svc) != 0
			}
		})
		_, err = p.Detect(ctx, photo)
		if slowErr := <-done; slowErr != nil {
			t.Fatalf("the slow photo: %v", slowErr)
		}
		if err != nil && !errors.As(err, &ue) {
			t.Fatal(err)
		}
		return errors.As(err, &ue)
	})
	var se *faces.StatusError
	if ue == nil || !errors.Is(err, faces.ErrUnavailable) || ue.RetryAfter < time.Second || !errors.As(err, &se) || se.StatusCode != 503 || se.Code != "busy" {
		t.Fatalf("busy: %v", err)
	}

	// The slow photo is done; its place is free again.
	res, err := p.Detect(ctx, photo)
	if err != nil || len(res.Faces) != 3 {
		t.Fatalf("after the slow photo: %d faces in sample3.jpg, %v", len(res.Faces), err)
	}
}

// TestHTTPSlowSendersHoldNoPlace is six connections that declare a
// megabyte, with the secret, and send it a byte at a time, against a
// sidecar with two places (one thread, a queue of one): the worker's
// requests are answered beside them, since a request takes its place only
// once its body has arrived.
func TestHTTPSlowSendersHoldNoPlace(t *testing.T) {
	// Senders are not cut off here (that is the sidecar's own test): they trickle for
	// as long as the test runs.
	svc := testenv.StartFaces(t, "ML_WORKERS=1", "ML_QUEUE=1", "ML_BODY_TIMEOUT_MS=3600000")
	p := provider(t, svc.Endpoint(), svc.Secret, 0)
	photo := readDemo(t, "sample3.jpg")

	const senders = 6
	conns := make([]net.Conn, senders)
	hungUp := make([]chan struct{}, senders)
	for i := range conns {
		c, err := net.Dial("tcp", strings.TrimPrefix(svc.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /v1/faces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: image/jpeg\r\nContent-Length: 1000000\r\n\r\n", svc.Secret)
		conns[i], hungUp[i] = c, make(chan struct{})
		go func() {
			io.Copy(io.Discard, c)
			close(hungUp[i])
		}()
	}
	stop := make(chan struct{})
	defer close(stop)
	var trickled atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			for _, c := range conns {
				c.Write([]byte{0xff})
			}
			trickled.Add(1)
		}
	}()
	// A few bytes each: the sidecar has read their headers.
	testenv.Eventually(t, "the slow senders trickling", time.Minute, func() bool { return trickled.Load() >= 3 })

	for i := range 3 {
		res, err := p.Detect(context.Background(), photo)
		if err != nil {
			t.Fatalf("request %d beside %d slow senders: %v", i, senders, err)
		}
		if len(res.Faces) != 3 {
			t.Fatalf("%d faces in sample3.jpg", len(res.Faces))
		}
	}
	for i, h := range hungUp {
		select {
		case <-h:
			t.Errorf("slow sender %d was hung up on: the requests were not answered beside it", i)
		default:
		}
	}
	t.Logf("3 requests answered beside %d senders that trickled %d bytes each", senders, trickled.Load())
}

// TestHTTPAnswers checks how a provider's other answers map, with a plain
// HTTP server standing in for a provider that misbehaves.
func TestHTTPAnswers(t *testing.T) {
	answer := func(status int, body string) *faces.HTTP {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Content-Type") != "image/jpeg" {
				http.Error(w, "wrong type", 415)
				return
			}
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}))
		t.Cleanup(srv.Close)
		return provider(t, srv.URL, "", 0)
	}
	jpg := []byte{0xff, 0xd8, 0xff}
	ctx := context.Background()

	_, err := answer(500, `{"code":"detection_failed","message":"The detection thread stopped."}`).Detect(ctx, jpg)
	var se *faces.StatusError
	if !errors.As(err, &se) || se.BadImage() || se.Code != "detection_failed" || errors.Is(err, faces.ErrUnavailable) {
		t.Errorf("500: %v", err)
	}
	for _, status := range []int{429, 502, 503, 504} {
		_, err := answer(status, "later").Detect(ctx, jpg)
		var ue *faces.UnavailableError
		if !errors.As(err, &ue) || ue.RetryAfter != 7*time.Second {
			t.Errorf("%d: %v", status, err)
		}
	}
	for _, body := range []string{
		`not json`,
		`{"width":0,"height":10,"faces":[]}`,
		`{"width":10,"height":10,"faces":[{"box":{"x":0.8,"y":0.1,"w":0.5,"h":0.2},"score":0.9}]}`,
		`{"width":10,"height":10,"faces":[{"box":{"x":0.1,"y":0.1,"w":0.2,"h":0.2},"score":0.9,"eyeOpenness":{"left":3,"right":0.3}}]}`,
	} {
		_, err := answer(200, body).Detect(ctx, jpg)
		if err == nil || errors.Is(err, faces.ErrUnavailable) || errors.As(err, &se) {
			t.Errorf("%s: %v", body, err)
		}
	}
	res, err := answer(200, `{"width":10,"height":8,"faces":[{"box":{"x":0.1,"y":0.1,"w":0.2,"h":0.3},"score":0.9}],"model":"m"}`).Detect(ctx, jpg)
	if err != nil || len(res.Faces) != 1 || res.Faces[0].EyeOpenness != nil || res.Faces[0].Box.H != 0.3 {
		t.Errorf("a face without mesh measures: %+v, %v", res, err)
	}
	if _, err := answer(200, `{}`).Detect(ctx, nil); err == nil {
		t.Error("an empty image was sent")
	}
}

func TestSharpness(t *testing.T) {
	// Fine random texture, and the same texture blurred.
	r := rand.New(rand.NewPCG(1, 2))
	tex := image.NewRGBA(image.Rect(0, 0, 600, 400))
	for i := range tex.Pix {
		tex.Pix[i] = uint8(r.IntN(256))
		if i%4 == 3 {
			tex.Pix[i] = 255
		}
	}
	box := faces.Box{X: 0.25, Y: 0.25, W: 0.5, H: 0.5}
	sharp, soft := faces.Sharpness(tex, box), faces.Sharpness(blurred(tex), box)
	if sharp < 90 || soft <= 0 || soft > sharp*2/3 {
		t.Errorf("texture %.1f, blurred %.1f", sharp, soft)
	}
	// Contrast does not count: the texture at a tenth of its contrast (a
	// face in soft light) reads as sharp.
	dim := image.NewRGBA(tex.Rect)
	for i, v := range tex.Pix {
		dim.Pix[i] = 115 + v/10
		if i%4 == 3 {
			dim.Pix[i] = 255
		}
	}
	if s := faces.Sharpness(dim, box); s < 90 {
		t.Errorf("the texture at a tenth of its contrast: %.1f", s)
	}
	flat := image.NewUniform(color.Gray{Y: 128})
	flatImg := image.NewGray(image.Rect(0, 0, 100, 100))
	draw.Draw(flatImg, flatImg.Bounds(), flat, image.Point{}, draw.Src)
	if s := faces.Sharpness(flatImg, box); s != 0 {
		t.Errorf("flat grey: %v", s)
	}
	// A box beyond the image is clipped to it; one under 3 pixels is 0.
	if s := faces.Sharpness(tex, faces.Box{X: 0.9, Y: 0.9, W: 0.5, H: 0.5}); s <= 0 {
		t.Errorf("a box across the edge: %v", s)
	}
	if s := faces.Sharpness(tex, faces.Box{X: 0.5, Y: 0.5, W: 0.001, H: 0.001}); s != 0 {
		t.Errorf("a box of one pixel: %v", s)
	}
	if r := (faces.Box{X: 0.1, Y: 0.2, W: 0.3, H: 0.4}).Rect(image.Rect(10, 20, 110, 70)); r != image.Rect(20, 30, 50, 50) {
		t.Errorf("Rect: %v", r)
	}
}

func TestClippedReadsADecodedPreview(t *testing.T) {
	// A decoded JPEG is YCbCr: white over its top half, grey below.
	img := image.NewYCbCr(image.Rect(0, 0, 40, 40), image.YCbCrSubsampleRatio444)
	for y := range 40 {
		for x := range 40 {
			img.Y[img.YOffset(x, y)] = map[bool]uint8{true: 255, false: 100}[y < 20]
			img.Cb[img.COffset(x, y)], img.Cr[img.COffset(x, y)] = 128, 128
		}
	}
	if got := faces.Clipped(img, faces.Box{W: 1, H: 1}); got != 0.5 {
		t.Errorf("half white: %v clipped, want 0.5", got)
	}
	if got := faces.Clipped(img, faces.Box{Y: 0.5, W: 1, H: 0.5}); got != 0 {
		t.Errorf("the grey half: %v clipped, want 0", got)
	}
	if got := faces.Clipped(img, faces.Box{X: 0.5, Y: 0.5}); got != 0 {
		t.Errorf("an empty box: %v", got)
	}
}
