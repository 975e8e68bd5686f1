package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"lightbox/store"
)

// readBody reads the request's body, at most limit bytes (-1: the
// server's own cap on every body). A body past the limit is 413
// body_too_large; one that stopped arriving, or could not be read, is
// answered as such.
func readBody(c *gin.Context, limit int64) ([]byte, error) {
	r := io.Reader(c.Request.Body)
	if limit >= 0 {
		r = io.LimitReader(r, limit+1)
	}
	body, err := io.ReadAll(r)
	var (
		tooLarge *http.MaxBytesError
		stalled  *Error // the body stopped arriving (idleBody)
	)
	switch {
	case errors.As(err, &tooLarge):
		return nil, apiError(http.StatusRequestEntityTooLarge, "body_too_large", "The request body is larger than %d bytes.", tooLarge.Limit)
	case limit >= 0 && int64(len(body)) > limit:
		return nil, apiError(http.StatusRequestEntityTooLarge, "body_too_large", "The request body is larger than %d bytes.", limit)
	case errors.As(err, &stalled):
		return nil, stalled
	case err != nil:
		return nil, apiError(http.StatusBadRequest, "invalid_body", "The request body could not be read.")
	}
	return body, nil
}

// idempotent makes a POST replayable under its Idempotency-Key: the same key
// and body within 24 hours answers the first response again; the same key
// with another body is 422. Answers of 5xx are not kept, so a client can
// retry after a server-side failure.
func (s *Server) idempotent(c *gin.Context) {
	key := c.GetHeader("Idempotency-Key")
	if key == "" {
		c.Next()
		return
	}
	if len(key) > 255 {
		fail(c, apiError(http.StatusBadRequest, "validation_failed", "Idempotency-Key must be at most 255 characters.").
			with("fields", map[string]string{"Idempotency-Key": "must be at most 255 characters"}))
		return
	}
	if !isText(key) { // it is kept in Postgres as text
		fail(c, fieldError("Idempotency-Key", "must be UTF-8 text"))
		return
	}
	body, err := readBody(c, -1)
	if err != nil {
		fail(c, err)
		return
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(body))
	h := sha256.New()
	h.Write(body)
	user := principal(c).ID

	saved, err := s.store.ClaimIdempotencyKey(c.Request.Context(), user, key, c.Request.Method, c.Request.URL.Path, h.Sum(nil))
	switch {
	case errors.Is(err, store.ErrIdempotencyReused):
		fail(c, apiError(http.StatusUnprocessableEntity, "idempotency_key_reused", "This Idempotency-Key was used with a different request."))
		return
	case errors.Is(err, store.ErrIdempotencyInFlight):
		fail(c, apiError(http.StatusConflict, "idempotency_key_in_progress", "A request with this Idempotency-Key is still running; retry shortly."))
		return
	case err != nil:
		fail(c, err)
		return
	case saved != nil:
		c.Header("Idempotent-Replayed", "true")
		c.Data(saved.StatusCode, saved.ContentType, saved.Body)
		c.Abort()
		return
	}

	rec := &recorder{ResponseWriter: c.Writer}
	c.Writer = rec
	c.Next()

	ctx := context.WithoutCancel(c.Request.Context())
	// A failure or a "busy, retry" is no answer to replay: the retry runs.
	if status := rec.Status(); status >= 500 || status == http.StatusTooManyRequests {
		err = s.store.ReleaseIdempotencyKey(ctx, user, key)
	} else {
		err = s.store.SaveIdempotentResponse(ctx, user, key, store.SavedResponse{
			StatusCode: status, ContentType: rec.Header().Get("Content-Type"), Body: rec.body.Bytes(),
		})
	}
	if err != nil {
		logger(c).Error("idempotency record", "err", err)
	}
}

// recorder keeps a copy of what a handler writes.
type recorder struct {
	gin.ResponseWriter
	body bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *recorder) WriteString(s string) (int, error) {
	r.body.WriteString(s)
	return r.ResponseWriter.WriteString(s)
}
