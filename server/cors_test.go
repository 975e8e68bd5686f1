package server_test

import (
	"strings"
	"testing"

	"lightbox/testsupport/testenv"
)

const appOrigin = "https://app.example.com"

func TestCORSLetsListedOriginsCallTheAPIAndPut(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{"CORS_ORIGINS": appOrigin + ", http://localhost:5173"}})
	key := a.user("ana@example.org", false)
	project := a.newProject(key)

	allowed := func(r reply, origin string) {
		t.Helper()
		if r.header.Get("Access-Control-Allow-Origin") != origin || r.header.Get("Access-Control-Allow-Credentials") != "true" {
			t.Fatalf("allow origin %q credentials %q, want %s and true", r.header.Get("Access-Control-Allow-Origin"),
				r.header.Get("Access-Control-Allow-Credentials"), origin)
		}
		if !strings.Contains(strings.Join(r.header.Values("Vary"), ","), "Origin") {
			t.Fatalf("Vary %q lacks Origin", r.header.Values("Vary"))
		}
	}
	preflight := func(path, method, origin string) reply {
		return a.do("OPTIONS", path, "", nil, "Origin", origin, "Access-Control-Request-Method", method,
			"Access-Control-Request-Headers", "authorization,content-type,idempotency-key")
	}

	r := preflight("/v1/projects/"+project+"/assets:prepareUpload", "POST", appOrigin)
	expect(t, r, 204, "")
	allowed(r, appOrigin)
	if !strings.Contains(r.header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Idempotency-Key") {
		t.Fatalf("preflight allows methods %q headers %q", r.header.Get("Access-Control-Allow-Methods"), r.header.Get("Access-Control-Allow-Headers"))
	}
	r = a.do("GET", "/v1/projects/"+project, key, nil, "Origin", "http://localhost:5173")
	expect(t, r, 200, "")
	allowed(r, "http://localhost:5173")
	if !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "X-Request-Id") {
		t.Fatalf("expose headers %q", r.header.Get("Access-Control-Expose-Headers"))
	}

	// The signed upload URL: the browser's preflight for the PUT, then the PUT.
	ph := corpus(t, "photos/wood.jpg")[0]
	up := a.prepare(key, project, []photo{ph})[0]
	path := strings.TrimPrefix(up.UploadURL, a.url)
	r = preflight(path, "PUT", appOrigin)
	expect(t, r, 204, "")
	allowed(r, appOrigin)
	if !strings.Contains(r.header.Get("Access-Control-Allow-Methods"), "PUT") {
		t.Fatalf("preflight allows methods %q", r.header.Get("Access-Control-Allow-Methods"))
	}
	headers := []string{"Origin", appOrigin}
	for k, v := range up.Headers {
		headers = append(headers, k, v)
	}
	r = a.do("PUT", path, "", string(ph.data), headers...)
	expect(t, r, 201, "")
	allowed(r, appOrigin)
	expect(t, a.finalize(key, project, []upload{up}, []string{ph.sum()}), 200, "")
}

func TestCORSIgnoresOtherOriginsAndRoutes(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	listed := startAppWith(t, env, env.Redis, options{env: map[string]string{"CORS_ORIGINS": appOrigin}})
	unlisted := startAppWith(t, env, env.Redis, options{})
	key := listed.user("ana@example.org", false)
	for _, c := range []struct {
		name   string
		a      *app
		path   string
		origin string
	}{
		{"unlisted origin", listed, "/v1/projects", "https://evil.example.com"},
		{"no CORS_ORIGINS", unlisted, "/v1/projects", appOrigin},
		{"not the API", listed, "/healthz", appOrigin},
	} {
		pre := c.a.do("OPTIONS", c.path, "", nil, "Origin", c.origin, "Access-Control-Request-Method", "GET")
		get := c.a.do("GET", c.path, key, nil, "Origin", c.origin)
		if get.status != 200 {
			t.Fatalf("%s: GET %s: %d", c.name, c.path, get.status)
		}
		for _, r := range []reply{pre, get} {
			if v := r.header.Get("Access-Control-Allow-Origin") + r.header.Get("Access-Control-Allow-Credentials"); v != "" {
				t.Fatalf("%s: CORS headers %q on %d", c.name, v, r.status)
			}
		}
		if pre.status == 204 {
			t.Fatalf("%s: preflight answered 204", c.name)
		}
	}
}

func TestTrustedProxiesDecideTheClientAddress(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	for _, c := range []struct {
		proxies, want, not string
	}{
		{"", "remoteIp=127.0.0.1", "203.0.113.7"},
		{"127.0.0.1/32", "remoteIp=203.0.113.7", "remoteIp=127.0.0.1"},
	} {
		logs := &testenv.LockedBuffer{}
		a := startAppWith(t, env, env.Redis, options{env: map[string]string{"TRUSTED_PROXIES": c.proxies}, logTo: logs})
		expect(t, a.do("GET", "/healthz", "", nil, "X-Forwarded-For", "203.0.113.7"), 200, "")
		if got := logs.String(); !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
			t.Fatalf("TRUSTED_PROXIES=%q: log wants %s and not %s:\n%s", c.proxies, c.want, c.not, got)
		}
	}
}
