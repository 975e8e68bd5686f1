package jsonbody_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"lightbox/server/jsonbody"
)

// codes are the answers Decode may give, by code.
var codes = map[string]int{
	"unsupported_media_type": http.StatusUnsupportedMediaType,
	"body_too_large":         http.StatusRequestEntityTooLarge,
	"invalid_json":           http.StatusBadRequest,
	"validation_failed":      http.StatusBadRequest,
}

// file has the shapes a request body holds: optional text, a number, a
// time that reads itself.
type file struct {
	ClientFileID *string    `json:"clientFileId"`
	Filename     string     `json:"filename"`
	ByteSize     int64      `json:"byteSize"`
	ContentType  string     `json:"contentType"`
	CapturedAt   *time.Time `json:"capturedAt"`
}

type body struct {
	Files []file `json:"files"`
}

// decode runs Decode on one request body, as a handler would.
func decode(contentType string, raw []byte, dst any) error {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/v1/projects", bytes.NewReader(raw))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	r.Body = http.MaxBytesReader(rec, r.Body, 4096)
	return jsonbody.Decode(r, dst)
}

// FuzzDecode checks the decoder on any body and Content-Type: it never
// panics, every refusal is a coded 4xx problem, and what it accepts
// encodes back to a body it accepts again, as the same value.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, contentType string, raw []byte) {
		var in body
		err := decode(contentType, raw, &in)
		if err != nil {
			var p *jsonbody.Problem
			if !errors.As(err, &p) || codes[p.Code] != p.Status || p.Message == "" {
				t.Fatalf("refusal %#v is not a coded 4xx problem", err)
			}
			return
		}
		again, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("an accepted body does not encode back: %v", err)
		}
		var out body
		if err := decode("application/json", again, &out); err != nil {
			t.Fatalf("its own encoding %s is refused: %v", again, err)
		}
		if twice, _ := json.Marshal(out); !bytes.Equal(twice, again) {
			t.Fatalf("decoded twice, %s became %s", again, twice)
		}
	})
}
