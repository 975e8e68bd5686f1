package uploader

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"lightbox/retryafter"
	"lightbox/wait"
)

// maxAttempts bounds the tries of one request that keeps failing for
// reasons that pass (network, 5xx, 429): about two minutes of backoff, so
// a server restart is ridden out and a server that is gone ends the run.
const maxAttempts = 8

// APIError is an error answer of the API.
type APIError struct {
	Status  int
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
	// RetryAfter is the wait the server asked for, from Retry-After.
	RetryAfter time.Duration `json:"-"`
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return e.Code + ": " + e.Message
}

// transient reports whether the same request may succeed later.
func (e *APIError) transient() bool {
	switch {
	case e.Status >= 500, e.Status == http.StatusRequestTimeout:
		return true
	case e.Status == http.StatusTooManyRequests:
		// Without a wait, the request asks more than the budget ever
		// holds (details.maxAtOnce): waiting does not help.
		return e.RetryAfter > 0
	case e.Status == http.StatusConflict:
		return e.Code == "idempotency_key_in_progress"
	}
	return false
}

// maxAtOnce is the most a budget ever allows at once, when a 429 says so.
func (e *APIError) maxAtOnce() int {
	if n, ok := e.Details["maxAtOnce"].(float64); ok {
		return int(n)
	}
	return 0
}

// client calls the API with retries. Every 429 holds all of the client's
// new requests until its Retry-After has passed: the budget is the user's,
// shared by every request.
type client struct {
	base, key string
	http      *http.Client
	report    func(Event)
	// slowDown is told of every refusal that asks for less traffic.
	slowDown func()

	mu        sync.Mutex
	holdUntil time.Time
}

// backoff is the pause before try n+1 (n from 1): exponential from half a
// second to 30 s, with full jitter so many clients do not retry in step.
func backoff(n int) time.Duration {
	d := min(30*time.Second, 500*time.Millisecond<<min(n-1, 6))
	return d/2 + rand.N(d/2+1)
}

// hold makes every new request wait until d from now.
func (c *client) hold(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if until := time.Now().Add(d); until.After(c.holdUntil) {
		c.holdUntil = until
	}
}

func (c *client) held(ctx context.Context) error {
	c.mu.Lock()
	d := time.Until(c.holdUntil)
	c.mu.Unlock()
	return wait.For(ctx, d)
}

// newKey is an Idempotency-Key.
func newKey() string { return uuid.NewString() }

// call sends a JSON request to the API and decodes a 2xx answer into out,
// retrying what may pass. A POST carries an Idempotency-Key, kept across
// retries whose answer was lost, so a retried prepare or create is done
// once; a 429's answer is kept by the server too, so the retry after it
// is a new request with a new key.
func (c *client) call(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	return c.send(ctx, method, path, "application/json", body, out)
}

// send is call with a body of contentType as it is.
func (c *client) send(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	key := newKey()
	for attempt := 1; ; attempt++ {
		if err := c.held(ctx); err != nil {
			return err
		}
		err := c.once(ctx, method, path, contentType, body, key, out)
		if err == nil || ctx.Err() != nil {
			return err
		}
		var apiErr *APIError
		if errors.As(err, &apiErr) && !apiErr.transient() {
			return err
		}
		quota := apiErr != nil && apiErr.Code == "quota_exceeded"
		if quota {
			// Waiting for the run's own uploads to finish is not a failure
			// that repeats: it does not use up the tries.
			attempt--
		}
		if attempt >= maxAttempts {
			return fmt.Errorf("%s %s: gave up after %d tries: %w", method, path, attempt, err)
		}
		var pause time.Duration
		switch {
		case quota:
			key = newKey()
			pause = c.overQuota(path, apiErr)
		case apiErr != nil && apiErr.Status == http.StatusTooManyRequests:
			key = newKey()
			pause = c.refused(path, apiErr)
		default:
			pause = backoff(attempt)
			c.report(Event{Kind: EventRetry, Message: fmt.Sprintf("%s %s: %v", method, path, err), WaitSeconds: pause.Seconds()})
		}
		if err := wait.For(ctx, pause); err != nil {
			return err
		}
	}
}

// quotaRetry is how soon a request refused for a full quota asks again.
const quotaRetry = 2 * time.Second

// overQuota handles a 429 quota_exceeded: a quota of files or bytes in
// flight frees itself as this run's own PUTs and finalizes end, usually
// long before the earliest upload expires (the answer's Retry-After), so
// only the refused request waits, and asks again soon; holding every
// request, as a rate limit's 429 does, held the very uploads that free it
// until their URLs expired.
func (c *client) overQuota(what string, e *APIError) time.Duration {
	pause := min(e.RetryAfter, quotaRetry) + rand.N(quotaRetry/4)
	c.report(Event{Kind: EventRateLimited, Message: what + ": " + e.Code, WaitSeconds: pause.Seconds()})
	return pause
}

// refused handles a 429 that says when to come back: every request holds
// until then (plus a little jitter, so they do not all return at once),
// and concurrency backs off. It returns the pause.
func (c *client) refused(what string, e *APIError) time.Duration {
	pause := e.RetryAfter + rand.N(e.RetryAfter/10+100*time.Millisecond)
	c.hold(pause)
	if c.slowDown != nil {
		c.slowDown()
	}
	c.report(Event{Kind: EventRateLimited, Message: what, WaitSeconds: pause.Seconds()})
	return pause
}

func (c *client) once(ctx context.Context, method, path, contentType string, body []byte, key string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if method == http.MethodPost {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := c.http.Do(req)
	if err != nil {
		// The request is named by the caller; keep only why it failed.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return err
	}
	defer res.Body.Close()
	if err := answerError(res); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return nil
}

// answerError is the APIError of a non-2xx answer, or nil.
func answerError(res *http.Response) error {
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return nil
	}
	e := &APIError{Status: res.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if json.Unmarshal(b, e) != nil || e.Code == "" {
		e.Code = strings.ToLower(strings.ReplaceAll(http.StatusText(res.StatusCode), " ", "_"))
		e.Message = strings.TrimSpace(string(b))
	}
	// Both end up on a terminal.
	e.Code, e.Message = Clean(e.Code), Clean(e.Message)
	e.RetryAfter = retryafter.Parse(res.Header.Get("Retry-After"), time.Now())
	if e.Status == http.StatusTooManyRequests && e.RetryAfter <= 0 && e.maxAtOnce() == 0 {
		e.RetryAfter = time.Second // a 429 that names no wait still asks for one
	}
	return e
}
