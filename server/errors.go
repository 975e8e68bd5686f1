package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"lightbox/app"
	"lightbox/blob"
	"lightbox/imaging/formats"
	"lightbox/jobs"
	"lightbox/store"
)

// Error is an API error: a stable snake_case code for programs, a sentence
// for people, and the HTTP status that goes with them.
type Error struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func apiError(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) with(key string, v any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = v
	return e
}

var (
	errNotFound        = func() *Error { return apiError(http.StatusNotFound, "not_found", "No such resource.") }
	errNoRoute         = func() *Error { return apiError(http.StatusNotFound, "route_not_found", "No such route.") }
	errUnauthenticated = func() *Error {
		return apiError(http.StatusUnauthorized, "unauthenticated", "Send an API key as 'Authorization: Bearer <key>' or sign in.")
	}
)

type errorBody struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Details   map[string]any `json:"details,omitempty"`
	RequestID string         `json:"requestId"`
}

// fail answers with err in the error shape and stops the chain. Errors that
// are not *Error are logged and shown as a 500 without their text, which may
// hold internals.
func fail(c *gin.Context, err error) {
	var e *Error
	var (
		quota       *app.QuotaError
		fields      app.FieldErrors
		unsupported *app.UnsupportedError
	)
	switch {
	case errors.As(err, &e):
	case errors.As(err, &quota):
		e = quotaRefusal(c.Writer.Header(), quota)
	case errors.As(err, &fields):
		e = apiError(http.StatusBadRequest, "validation_failed", "Some fields are not valid.").with("fields", map[string]string(fields))
	case errors.As(err, &unsupported):
		e = apiError(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"Some files are of a type this service does not take; it takes "+formats.Names+".").with("fields", map[string]string(unsupported.Fields))
	case errors.Is(err, store.ErrNotFound):
		e = errNotFound()
	case errors.Is(err, jobs.ErrQueueUnavailable):
		e = errQueueUnavailable()
	case errors.Is(err, store.ErrBadCursor):
		e = apiError(http.StatusBadRequest, "invalid_cursor", "The cursor is not one this service issued.")
	case errors.Is(err, blob.ErrFull):
		logger(c).ErrorContext(c, "storage full", "err", err)
		e = apiError(http.StatusInsufficientStorage, "storage_full", "The server's storage is full, so nothing was kept; send the same request again once space is freed.")
	case errors.Is(err, blob.ErrUnavailable):
		logger(c).ErrorContext(c, "storage unavailable", "err", err)
		e = apiError(http.StatusServiceUnavailable, "storage_unavailable", "Storage does not answer, so nothing was kept; send the same request again.")
	default:
		logger(c).ErrorContext(c, "request failed", "err", err)
		e = apiError(http.StatusInternalServerError, "internal", "Something went wrong on our side; the request id helps us find it.")
	}
	c.AbortWithStatusJSON(e.Status, errorBody{Code: e.Code, Message: e.Message, Details: e.Details, RequestID: requestID(c)})
}

func logger(c *gin.Context) *slog.Logger {
	if l, ok := c.Get(ctxLogger); ok {
		return l.(*slog.Logger)
	}
	return slog.Default()
}
