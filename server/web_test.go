package server_test

import "testing"

func TestWebPagesAreServedWithTheirTypes(t *testing.T) {
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
