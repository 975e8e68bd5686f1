package server_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"lightbox/testsupport/testenv"
)

func TestReadyz(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.do("GET", "/readyz", "", nil)
	expect(t, r, 200, "")
	expect(t, a.do("GET", "/healthz", "", nil), 200, "")
}

func TestReadyzNamesRedisWhenItIsDown(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	// Nothing listens on port 1 of loopback: a Redis that does not answer.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { down.Close() })
	a := startApp(t, env, down)

	r := a.do("GET", "/readyz", "", nil)
	expect(t, r, 503, "not_ready")
	details := details(t, r)
	if details["redis"] == nil || details["postgres"] != nil {
		t.Fatalf("readyz details %v, want redis named and postgres not", details)
	}
}
