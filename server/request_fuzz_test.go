package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

// decodeCodes are the answers decodeJSON may give, by code.
var decodeCodes = map[string]int{
	"unsupported_media_type": http.StatusUnsupportedMediaType,
	"body_too_large":         http.StatusRequestEntityTooLarge,
	"invalid_json":           http.StatusBadRequest,
	"validation_failed":      http.StatusBadRequest,
}

// decodeBody runs decodeJSON on one request body, as a handler would.
func decodeBody(contentType string, body []byte, dst any) error {
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	c.Request = httptest.NewRequest(http.MethodPost, "/v1/projects", bytes.NewReader(body))
	if contentType != "" {
		c.Request.Header.Set("Content-Type", contentType)
	}
	c.Request.Body = http.MaxBytesReader(rec, c.Request.Body, 4096)
	return decodeJSON(c, dst)
}

// FuzzDecodeJSON checks the request decoder on any body and Content-Type:
// it never panics, every refusal is a coded 4xx answer, and what it
// accepts encodes back to a body it accepts again, as the same value.
func FuzzDecodeJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		var in struct {
			Files []prepareFile `json:"files"`
		}
		err := decodeBody(contentType, body, &in)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || decodeCodes[e.Code] != e.Status || e.Message == "" {
				t.Fatalf("refusal %#v is not a coded 4xx answer", err)
			}
			return
		}
		again, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("an accepted body does not encode back: %v", err)
		}
		var out struct {
			Files []prepareFile `json:"files"`
		}
		if err := decodeBody("application/json", again, &out); err != nil {
			t.Fatalf("its own encoding %s is refused: %v", again, err)
		}
		if twice, _ := json.Marshal(out); !bytes.Equal(twice, again) {
			t.Fatalf("decoded twice, %s became %s", again, twice)
		}
	})
}
