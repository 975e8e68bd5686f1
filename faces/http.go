package faces

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"net/http"
	"time"

	"golang.org/x/image/draw"

	"lightbox/retryafter"
)

// HTTPConfig configures an HTTP provider.
type HTTPConfig struct {
	// URL receives the POST, e.g. the bundled sidecar's
	// http://127.0.0.1:57080/v1/faces.
	URL string
	// Secret, when set, is sent as "Authorization: Bearer <Secret>": the
	// bundled sidecar refuses callers without its ML_SECRET.
	Secret string
	// Header is added to every request.
	Header http.Header
	// Timeout bounds one request, the provider's queue included. 0 means
	// 2 minutes (the sidecar gives up on one image after 1).
	Timeout time.Duration
	// Client sends the requests; nil means one whose idle connections are
	// closed after 30 s, before the sidecar's own 61 s, so that no request
	// is sent on a connection the sidecar is closing.
	Client *http.Client
}

// HTTP is a Provider backed by a face service. Each Detect sends
//
//	POST <URL>
//	Content-Type: image/jpeg
//
//	<the JPEG>
//
// and expects a 2xx answer with a JSON Result. Errors:
//
//   - no connection, a timeout, or 408 (a body cut off as too slow: a busy
//     machine), 429, 502, 503 or 504: an *UnavailableError (errors.Is
//     ErrUnavailable), with the answer's Retry-After;
//   - 401 or 403, the provider refusing the Secret: an *UnavailableError
//     too, wrapping the *StatusError, so that tasks wait for the secrets
//     to be set right rather than fail their photos;
//   - any other answer: a *StatusError; its BadImage says whether the
//     provider refused the image itself (4xx), which no retry mends;
//   - a 2xx answer that is not a valid Result: an error saying so.
//
// A context that the caller cancelled or that expired returns its own
// error, which is neither.
type HTTP struct {
	cfg    HTTPConfig
	client *http.Client
}

// NewHTTP checks cfg and returns the provider.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	if cfg.URL == "" {
		return nil, errors.New("faces: an HTTP provider needs a URL")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	c := cfg.Client
	if c == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.IdleConnTimeout = 30 * time.Second
		c = &http.Client{Transport: t}
	}
	return &HTTP{cfg: cfg, client: c}, nil
}

// StatusError is an answer that is neither 2xx nor an outage.
type StatusError struct {
	StatusCode int
	Code       string // the provider's {"code"}, when it sent one
	Message    string // its {"message"}, or the start of the answer
}

func (e *StatusError) Error() string {
	code := e.Code
	if code == "" {
		code = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("faces: the face provider answered %d %s: %s", e.StatusCode, code, e.Message)
}

// BadImage reports whether the provider refused the image itself (not a
// JPEG, too many pixels, too large): sending it again will not help.
func (e *StatusError) BadImage() bool {
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout:
		return false
	}
	return e.StatusCode >= 400 && e.StatusCode < 500
}

// maxAnswer bounds the answer read: a photo's faces take a few kilobytes.
const maxAnswer = 4 << 20

// maxFaces bounds the faces taken from one answer.
const maxFaces = 1000

func (h *HTTP) Detect(ctx context.Context, jpeg []byte) (Result, error) {
	if len(jpeg) == 0 {
		return Result{}, errors.New("faces: empty image")
	}
	return h.post(ctx, "image/jpeg", jpeg)
}

// DetectImage finds the faces in pixels the caller has decoded already,
// sent as a binary PPM (Content-Type: image/x-portable-pixmap): the bundled
// sidecar then skips its own JPEG decode, which is about 40 % of its CPU
// time per photo (sidecar/bench.js). A provider that takes only JPEG answers
// 415, a *StatusError.
func (h *HTTP) DetectImage(ctx context.Context, img image.Image) (Result, error) {
	if img == nil || img.Bounds().Empty() {
		return Result{}, errors.New("faces: empty image")
	}
	return h.post(ctx, "image/x-portable-pixmap", ppm(img))
}

// ppm encodes img as a binary PPM: a short header, then 8-bit RGB.
func ppm(img image.Image) []byte {
	b := img.Bounds()
	rgba, ok := img.(*image.RGBA)
	if !ok {
		rgba = image.NewRGBA(b)
		draw.Draw(rgba, b, img, b.Min, draw.Src)
	}
	w, hgt := b.Dx(), b.Dy()
	out := fmt.Appendf(make([]byte, 0, 32+3*w*hgt), "P6\n%d %d\n255\n", w, hgt)
	for y := range hgt {
		row := rgba.Pix[rgba.PixOffset(b.Min.X, b.Min.Y+y):][:4*w]
		for x := 0; x < len(row); x += 4 {
			out = append(out, row[x], row[x+1], row[x+2])
		}
	}
	return out
}

// post sends one image and reads the faces found in it.
func (h *HTTP) post(ctx context.Context, contentType string, body []byte) (Result, error) {
	rctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, h.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return Result{}, fmt.Errorf("faces: %w", err)
	}
	for k, vs := range h.cfg.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if h.cfg.Secret != "" {
		req.Header.Set("Authorization", "Bearer "+h.cfg.Secret)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return Result{}, h.outage(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return Result{}, h.outage(ctx, fmt.Errorf("reading the answer: %w", err))
	}
	switch resp.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
		http.StatusUnauthorized, http.StatusForbidden:
		return Result{}, &UnavailableError{
			RetryAfter: retryafter.Parse(resp.Header.Get("Retry-After"), time.Now()),
			Err:        statusError(resp.StatusCode, data),
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Result{}, statusError(resp.StatusCode, data)
	}
	var res Result
	if err := json.Unmarshal(data, &res); err != nil {
		return Result{}, fmt.Errorf("faces: the answer is not a faces result: %w", err)
	}
	if err := res.check(); err != nil {
		return Result{}, fmt.Errorf("faces: the answer is not a valid faces result: %w", err)
	}
	return res, nil
}

// outage is err, a request that got no answer, unless the caller's own
// context ended: that is the caller's doing, not the provider's.
func (h *HTTP) outage(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("faces: %w", ctx.Err())
	}
	return &UnavailableError{Err: err}
}

func statusError(status int, body []byte) *StatusError {
	e := &StatusError{StatusCode: status}
	var coded struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &coded) == nil && coded.Code != "" {
		e.Code, e.Message = coded.Code, coded.Message
	} else {
		e.Message = string(bytes.ToValidUTF8(body[:min(len(body), 200)], nil))
	}
	return e
}

// check refuses a result whose numbers cannot be a face: the caller stores
// and ranks them.
func (r *Result) check() error {
	if r.Width <= 0 || r.Height <= 0 {
		return fmt.Errorf("image size %d×%d", r.Width, r.Height)
	}
	if len(r.Faces) > maxFaces {
		return fmt.Errorf("%d faces, more than %d", len(r.Faces), maxFaces)
	}
	for i, f := range r.Faces {
		b := f.Box
		const slack = 1e-3 // rounding
		if !fraction(b.X) || !fraction(b.Y) || !fraction(b.W) || !fraction(b.H) ||
			b.W == 0 || b.H == 0 || b.X+b.W > 1+slack || b.Y+b.H > 1+slack {
			return fmt.Errorf("face %d: box %+v is not inside the image", i, b)
		}
		if !fraction(f.Score) {
			return fmt.Errorf("face %d: score %v", i, f.Score)
		}
		if e := f.EyeOpenness; e != nil && (!fraction(e.Left) || !fraction(e.Right)) {
			return fmt.Errorf("face %d: eye openness %+v", i, *e)
		}
		if a := f.HeadAngles; a != nil && (!angle(a.Yaw) || !angle(a.Pitch) || !angle(a.Roll)) {
			return fmt.Errorf("face %d: head angles %+v", i, *a)
		}
		if l := f.Landmarks; l != nil {
			for _, p := range []Point{l.LeftEye, l.RightEye, l.Nose, l.Mouth} {
				if !finite(p.X) || !finite(p.Y) {
					return fmt.Errorf("face %d: landmark %+v", i, p)
				}
			}
		}
	}
	return nil
}

func finite(v float64) bool   { return !math.IsNaN(v) && !math.IsInf(v, 0) }
func fraction(v float64) bool { return v >= 0 && v <= 1 }
func angle(v float64) bool    { return v >= -180 && v <= 180 }
