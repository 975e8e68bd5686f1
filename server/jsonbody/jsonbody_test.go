package jsonbody_test

import (
	"errors"
	"testing"

	"lightbox/server/jsonbody"
)

// Each refusal names its code and, for a value at fault, the field's path.
func TestRefusalsNameTheField(t *testing.T) {
	for _, c := range []struct {
		contentType, body, code, field string
	}{
		{"text/plain", `{}`, "unsupported_media_type", ""},
		{"application/json", ``, "invalid_json", ""},
		{"application/json", `{"files": []} {}`, "invalid_json", ""},
		{"application/json", `{"nope": 1}`, "invalid_json", ""},
		{"application/json", `{"files": [{}, {"byteSize": "big"}]}`, "validation_failed", "files[1].byteSize"},
		{"application/json", `{"files": [{"capturedAt": "yesterday"}]}`, "validation_failed", "files[0].capturedAt"},
		{"application/json", `{"files": [{"filename": "a\u0000b"}]}`, "validation_failed", "files[0].filename"},
		{"application/json", `{"files": [{"filename": "\ud800"}]}`, "validation_failed", "files[0].filename"},
	} {
		var in body
		err := decode(c.contentType, []byte(c.body), &in)
		var p *jsonbody.Problem
		if !errors.As(err, &p) || p.Code != c.code {
			t.Errorf("%s %q: %v, want %s", c.contentType, c.body, err, c.code)
			continue
		}
		if fields, _ := p.Details["fields"].(map[string]string); c.field != "" && fields[c.field] == "" {
			t.Errorf("%q: fields %v, want %s named", c.body, p.Details["fields"], c.field)
		}
	}
}

// Optional tells a field sent as null from one not sent, and names the
// wanted type of a value that does not fit.
func TestOptionalTellsAbsentFromNull(t *testing.T) {
	var in struct {
		Title jsonbody.Optional[string] `json:"title"`
		Size  jsonbody.Optional[int]    `json:"size"`
	}
	if err := decode("application/json", []byte(`{"title": null}`), &in); err != nil {
		t.Fatal(err)
	}
	if !in.Title.Set || in.Title.Value != nil || in.Size.Set {
		t.Fatalf("title %+v, size %+v; want title set to null, size absent", in.Title, in.Size)
	}
	err := decode("application/json", []byte(`{"size": "ten"}`), &in)
	var p *jsonbody.Problem
	if !errors.As(err, &p) || p.Message != "size must be a whole number." {
		t.Fatalf("%v, want size named as a whole number", err)
	}
}
