package server_test

import (
	"encoding/json"
	"slices"
	"testing"

	"lightbox/imaging/formats"
)

func TestWebPagesAreServedWithTheirTypes(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	for path, ctype := range map[string]string{
		"/": "text/html; charset=utf-8", "/admin": "text/html; charset=utf-8",
		"/static/api.js": "text/javascript; charset=utf-8", "/static/app.css": "text/css; charset=utf-8",
	} {
		r := a.do("GET", path, "", nil)
		expect(t, r, 200, "")
		if got := r.header.Get("Content-Type"); got != ctype {
			t.Errorf("%s: Content-Type %q, want %q", path, got, ctype)
		}
		expect(t, a.do("GET", path, "", nil, "If-None-Match", r.header.Get("ETag")), 304, "")
	}
	expect(t, a.do("GET", "/static/nothing.js", "", nil), 404, "route_not_found")
}

// The uploader reads the accepted formats from the server's own table:
// every format, its other content types and its extensions.
func TestAcceptedFormatsAreServedFromTheTable(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.do("GET", "/static/formats.json", "", nil)
	expect(t, r, 200, "")
	var got struct {
		Types []formats.Accepted `json:"types"`
		Names string             `json:"names"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Types) != len(formats.All()) || got.Names != formats.Names {
		t.Fatalf("%d formats named %q, want the table's %d", len(got.Types), got.Names, len(formats.All()))
	}
	for _, f := range got.Types {
		for _, ext := range f.Extensions {
			if formats.FromExt("photo"+ext).ContentType() != f.ContentType {
				t.Errorf("%s is served for %s, which the table reads otherwise", ext, f.ContentType)
			}
		}
		for _, alias := range f.Aliases {
			if formats.FromContentType(alias).ContentType() != f.ContentType {
				t.Errorf("%s is served for %s, which the table reads otherwise", alias, f.ContentType)
			}
		}
	}
	heic := slices.IndexFunc(got.Types, func(f formats.Accepted) bool { return f.ContentType == "image/heic" })
	if heic < 0 || !slices.Contains(got.Types[heic].Extensions, ".hif") || !slices.Contains(got.Types[heic].Aliases, "image/heif") {
		t.Errorf("HEIC is served as %+v", got.Types)
	}
}
