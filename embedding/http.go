package embedding

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"net/http"
	"time"

	"lightbox/retryafter"
)

// HTTPConfig configures an HTTP embedder.
type HTTPConfig struct {
	// URL receives the POST.
	URL string
	// Model is sent in the request and names the vectors (Model()).
	Model string
	// Dim is the vector length the service returns; answers of another
	// length are refused.
	Dim int
	// Header is added to every request, e.g. Authorization.
	Header http.Header
	// Timeout bounds one request, including reading the answer.
	// 0 means 30 s.
	Timeout time.Duration
	// Client sends the requests; nil means a plain http.Client.
	Client *http.Client
}

// HTTP is an Embedder backed by an embedding service. Each Embed call sends
//
//	POST <URL>
//	Content-Type: application/json
//
//	{"model": "<Model>", "image": "<base64 of a JPEG, quality 90>"}
//
// and expects a 2xx answer
//
//	{"embedding": [0.12, -0.03, ...]}
//
// with exactly Dim numbers, which it L2-normalises. A 429 answer is returned
// as a *RateLimitedError with the server's Retry-After; any other non-2xx
// answer as a *StatusError.
//
// A provider that embeds text into the same space (CLIP-style) answers
// EmbedText's request the same way, to the same URL:
//
//	{"model": "<Model>", "text": "red barn at dusk"}
//
// A request carries either "image" or "text", never both, so one endpoint
// can serve both kinds by looking at which field is present.
type HTTP struct {
	cfg    HTTPConfig
	client *http.Client
}

// NewHTTP checks cfg and returns the embedder.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	if cfg.URL == "" || cfg.Model == "" || cfg.Dim <= 0 {
		return nil, errors.New("embed: an HTTP embedder needs a URL, a model name and a dimension")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	c := cfg.Client
	if c == nil {
		c = &http.Client{}
	}
	return &HTTP{cfg: cfg, client: c}, nil
}

func (h *HTTP) Model() string { return h.cfg.Model }

func (h *HTTP) Dim() int { return h.cfg.Dim }

// StatusError is a non-2xx answer other than 429.
type StatusError struct {
	StatusCode int
	Body       string // the start of the answer, for the log
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("embed: the embedding service answered %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Body)
}

// RateLimitedError is a 429 answer. RetryAfter is how long the service asked
// callers to wait (0 when it did not say). It is not a failure of the
// image: callers should try again after RetryAfter without counting it as
// a failed attempt.
type RateLimitedError struct {
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("embed: the embedding service is rate limiting, retry after %s", e.RetryAfter)
}

type httpRequest struct {
	Model string `json:"model"`
	Image string `json:"image,omitempty"`
	Text  string `json:"text,omitempty"`
}

type httpAnswer struct {
	Embedding []float32 `json:"embedding"`
}

// maxAnswer bounds the answer read: a vector of a few thousand numbers is
// far smaller.
const maxAnswer = 4 << 20

func (h *HTTP) Embed(ctx context.Context, img image.Image) ([]float32, error) {
	if img == nil || img.Bounds().Empty() {
		return nil, errors.New("embed: empty image")
	}
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, img, &jpeg.Options{Quality: 90}); err != nil {
		return nil, fmt.Errorf("embed: encoding the image: %w", err)
	}
	return h.post(ctx, httpRequest{Model: h.cfg.Model, Image: base64.StdEncoding.EncodeToString(jpg.Bytes())})
}

// EmbedText returns the unit-length vector of text in the images' space.
// Only a provider that embeds text too can answer it; see HTTP.
func (h *HTTP) EmbedText(ctx context.Context, text string) ([]float32, error) {
	if text == "" {
		return nil, errors.New("embed: empty text")
	}
	return h.post(ctx, httpRequest{Model: h.cfg.Model, Text: text})
}

// post sends one request and reads its vector.
func (h *HTTP) post(ctx context.Context, r httpRequest) ([]float32, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	for k, vs := range h.cfg.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embed: calling the embedding service: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("embed: reading the answer: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, &RateLimitedError{RetryAfter: retryafter.Parse(resp.Header.Get("Retry-After"), time.Now())}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, &StatusError{StatusCode: resp.StatusCode, Body: string(bytes.ToValidUTF8(data[:min(len(data), 200)], nil))}
	}
	var ans httpAnswer
	if err := json.Unmarshal(data, &ans); err != nil {
		return nil, fmt.Errorf("embed: the answer is not {\"embedding\": [numbers]}: %w", err)
	}
	if len(ans.Embedding) != h.cfg.Dim {
		return nil, fmt.Errorf("embed: the answer has %d numbers, want %d", len(ans.Embedding), h.cfg.Dim)
	}
	if err := normalize(ans.Embedding); err != nil {
		return nil, err
	}
	return ans.Embedding, nil
}
