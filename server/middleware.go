package server

import (
	"log/slog"
	"net/http"
	"net/url"
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
