package server_test

import (
	"strconv"
	"testing"

	"lightbox/testsupport/testenv"
)

func TestTwoServersShareOneUploadBudget(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	limits := options{env: map[string]string{"RATE_UPLOADS_PER_MINUTE": "5", "RATE_UPLOADS_BURST": "5"}}
	one := startAppWith(t, env, env.Redis, limits)
	two := startAppWith(t, env, env.Redis, limits)
	key := one.user("ana@example.org", false)
	project := one.newProject(key)
	files := func(n int) map[string]any {
		fs := make([]map[string]any, n)
		for i := range fs {
			fs[i] = map[string]any{"filename": "a.jpg", "byteSize": 100}
		}
		return map[string]any{"files": fs}
	}
	path := "/v1/projects/" + project + "/assets:prepareUpload"

	expect(t, one.do("POST", path, key, files(3)), 200, "")
	r := two.do("POST", path, key, files(3))
	expect(t, r, 429, "rate_limited")
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || retry < 1 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if got := details(t, r)["retryAfter"]; got != float64(retry) {
		t.Fatalf("details.retryAfter %v, Retry-After %d", got, retry)
	}
	// What is left of the budget still goes through.
	expect(t, two.do("POST", path, key, files(2)), 200, "")
	// Another user has a budget of their own.
	bob := one.user("bob@example.org", false)
	expect(t, two.do("POST", "/v1/projects/"+two.newProject(bob)+"/assets:prepareUpload", bob, files(5)), 200, "")
}

func TestRateLimitHeadersAndRefusal(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	// Six a minute: a token comes back every 10 s, so a machine slow
	// enough to take a second over four requests still spends the burst.
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{"RATE_API_PER_MINUTE": "6", "RATE_API_BURST": "3"}})
	key := a.user("ana@example.org", false)
	for i := range 3 {
		r := a.do("GET", "/v1/projects", key, nil)
		expect(t, r, 200, "")
		if r.header.Get("X-RateLimit-Limit") != "3" || r.header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) || r.header.Get("X-RateLimit-Reset") == "" {
			t.Fatalf("request %d headers: limit %q remaining %q reset %q", i, r.header.Get("X-RateLimit-Limit"),
				r.header.Get("X-RateLimit-Remaining"), r.header.Get("X-RateLimit-Reset"))
		}
	}
	r := a.do("GET", "/v1/projects", key, nil)
	expect(t, r, 429, "rate_limited")
	if retry, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || retry < 1 || retry > 10 || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("429 headers: Retry-After %q (want the next token's 1 to 10 s) remaining %q", r.header.Get("Retry-After"), r.header.Get("X-RateLimit-Remaining"))
	}
}

func TestLimiterOutageLetsRequestsThrough(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{})
	key := a.user("ana@example.org", false)
	env.Redis.Close() // the limiter's Redis is gone
	r := a.do("GET", "/v1/projects", key, nil)
	expect(t, r, 200, "")
	if r.header.Get("X-RateLimit-Limit") != "" {
		t.Fatal("limit headers without a limiter answer")
	}
}

func TestMoreThanTheBurstAtOnceSaysHowMuchFits(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{"RATE_UPLOADS_PER_MINUTE": "600", "RATE_UPLOADS_BURST": "5"}})
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	files := make([]map[string]any, 6)
	for i := range files {
		files[i] = map[string]any{"filename": "a.jpg", "byteSize": 100}
	}
	r := a.do("POST", "/v1/projects/"+project+"/assets:prepareUpload", key, map[string]any{"files": files})
	expect(t, r, 429, "rate_limited")
	if r.header.Get("Retry-After") != "" || details(t, r)["maxAtOnce"] != 5.0 || r.header.Get("X-RateLimit-Limit") != "5" {
		t.Fatalf("6 files against a burst of 5: Retry-After %q, body %s", r.header.Get("Retry-After"), r.body)
	}
	// The same files in two parts go through.
	expect(t, a.do("POST", "/v1/projects/"+project+"/assets:prepareUpload", key, map[string]any{"files": files[:5]}), 200, "")
}
