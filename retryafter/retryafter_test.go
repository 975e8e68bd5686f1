package retryafter_test

import (
	"net/http"
	"testing"
	"time"

	"lightbox/retryafter"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"7", 7 * time.Second},
		{"-3", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		if got := retryafter.Parse(c.v, now); got != c.want {
			t.Errorf("Parse(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}
