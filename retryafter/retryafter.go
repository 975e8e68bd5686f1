// Package retryafter reads the Retry-After header of an HTTP answer.
package retryafter

import (
	"net/http"
	"strconv"
	"time"
)

// Parse reads a Retry-After value, seconds or an HTTP date, as a wait from
// now. It is 0 when v is empty, malformed or a date already past.
func Parse(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Round(time.Second)
	}
	return 0
}
