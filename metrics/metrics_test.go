package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"lightbox/metrics"
	"lightbox/testsupport/testenv"
)

func TestTokenMatches(t *testing.T) {
	for _, c := range []struct {
		header, token string
		want          bool
	}{
		{"Bearer s3cret-token-0123456", "s3cret-token-0123456", true},
		{"bearer s3cret-token-0123456", "s3cret-token-0123456", true},
		{"Bearer  s3cret-token-0123456 ", "s3cret-token-0123456", true},
		{"Bearer s3cret-token-012345", "s3cret-token-0123456", false},
		{"s3cret-token-0123456", "s3cret-token-0123456", false},
		{"Basic s3cret-token-0123456", "s3cret-token-0123456", false},
		{"Bearer ", "", false}, // no token configured lets nobody in
	} {
		if got := metrics.TokenMatches(c.header, c.token); got != c.want {
			t.Errorf("TokenMatches(%q, %q) = %v", c.header, c.token, got)
		}
	}
}

func TestServeGuardsAndStops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	h := metrics.Protect("s3cret-token-0123456", metrics.Handler(metrics.NewRegistry()))
	go func() { done <- metrics.Serve(ctx, ln, h, slog.New(slog.NewTextHandler(io.Discard, nil))) }()

	url := "http://" + ln.Addr().String() + "/metrics"
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("without the token: %d %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	if m := testenv.Scrape(t, url, "Bearer s3cret-token-0123456"); m["go_goroutines"] == nil || m["process_start_time_seconds"] == nil {
		t.Fatalf("no runtime or process metrics in %d families", len(m))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("still serving after ctx ended")
	}
}
