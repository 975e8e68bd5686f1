package server

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
)

const (
	ctxRequestID = "lightbox.requestId"
	ctxLogger    = "lightbox.logger"
	ctxPrincipal = "lightbox.principal"
	ctxRoute     = "lightbox.route" // an action's route (see actions.go)
)

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// withRequestID keeps a caller's X-Request-Id when it is sane, or makes one,
// and echoes it on every answer.
func (s *Server) withRequestID(c *gin.Context) {
	id := c.GetHeader("X-Request-Id")
	if !validRequestID.MatchString(id) {
		id = uuid.NewString()
	}
	c.Set(ctxRequestID, id)
	c.Set(ctxLogger, s.log.With("requestId", id))
	c.Header("X-Request-Id", id)
	c.Next()
}

func requestID(c *gin.Context) string { return c.GetString(ctxRequestID) }

// accessLog writes one JSON line per request. Query strings are logged with
// secrets redacted: stream tokens travel in them.
func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	attrs := []any{
		"method", c.Request.Method,
		"path", c.Request.URL.Path,
		"status", c.Writer.Status(),
		"bytes", c.Writer.Size(),
		"durationMs", float64(time.Since(start).Microseconds()) / 1000,
		"remoteIp", c.ClientIP(),
	}
	if q := redactQuery(c.Request.URL.RawQuery); q != "" {
		attrs = append(attrs, "query", q)
	}
	if p := principal(c); p != nil {
		attrs = append(attrs, "userId", p.ID)
	}
	level := slog.LevelInfo
	if c.Writer.Status() >= 500 {
		level = slog.LevelError
	}
	logger(c).Log(c, level, "http request", attrs...)
}

var secretParams = []string{"accessToken", "token", "sig", "signature"}

func redactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "(unparsable)"
	}
	for _, k := range secretParams {
		if q.Has(k) {
			q.Set(k, "REDACTED")
		}
	}
	return q.Encode()
}

// recoverPanics turns a handler panic into a logged 500 in the error shape.
func (s *Server) recoverPanics(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			logger(c).ErrorContext(c, "handler panic", "panic", r, "stack", string(debug.Stack()))
			fail(c, apiError(http.StatusInternalServerError, "internal", "Something went wrong on our side; the request id helps us find it."))
		}
	}()
	c.Next()
}

// textPath answers 404 for a path that is not text (isText): it names
// nothing, and a slug or the path an Idempotency-Key is kept with would
// reach Postgres as text.
func textPath(c *gin.Context) {
	if !isText(c.Request.URL.Path) {
		fail(c, errNotFound())
		return
	}
	c.Next()
}

// limitBody caps JSON request bodies; uploads have their own, larger limit.
func (s *Server) limitBody(c *gin.Context) {
	if c.Request.Body != nil {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, s.cfg.MaxBodyBytes)
	}
	c.Next()
}

// idleBody ends a request whose body stops arriving: each read of the body
// must get bytes within BODY_READ_TIMEOUT, or it fails with 408
// body_timeout. Uploads may be large and slow, so the whole body has no
// limit; without one per read, a client that stalls holds its handler (and
// an upload its lock) for as long as the connection stays open.
func (s *Server) idleBody(c *gin.Context) {
	if c.Request.Body == nil || c.Request.Body == http.NoBody {
		c.Next()
		return
	}
	body := c.Request.Body
	b := &idleReader{ReadCloser: body, rc: http.NewResponseController(c.Writer), idle: s.cfg.BodyReadTimeout, log: logger(c)}
	c.Request.Body = b
	c.Next()
	// The server finishes the request by the body it gave: it closes the
	// connection at once on a large rest, and reads a small one to reuse
	// the connection. That read must not wait on a stalled client either.
	c.Request.Body = body
	if !b.ended {
		b.arm()
	}
}

type idleReader struct {
	io.ReadCloser
	rc    *http.ResponseController
	idle  time.Duration
	log   *slog.Logger
	ended bool // the body reached its end
	off   bool // the connection takes no deadline
}

func (r *idleReader) arm() {
	if r.off {
		return
	}
	if err := r.rc.SetReadDeadline(time.Now().Add(r.idle)); err != nil {
		r.off = true
		r.log.Warn("request body read without a timeout", "err", err)
	}
}

func (r *idleReader) Read(p []byte) (int, error) {
	r.arm()
	n, err := r.ReadCloser.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		// The server's own read after the end watches for the client
		// going away for as long as the handler runs: no deadline there.
		r.ended = true
		if !r.off {
			r.rc.SetReadDeadline(time.Time{})
		}
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = apiError(http.StatusRequestTimeout, "body_timeout",
			"No part of the request body arrived for %s; nothing was kept, send the request again.", r.idle)
	}
	return n, err
}
