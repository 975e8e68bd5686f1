package testenv

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds, and fails t if timeout passes
// first, naming what it waited for. timeout only bounds a hang: the tests
// run on busy cores, so it is minutes where a second would do on a quiet
// machine. cond is asked again after 10 ms, then half as often each time,
// at least once every 250 ms, so a state reached at once is seen at once
// and a long wait costs few queries.
func Eventually(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	eventually(t, what, timeout, 10*time.Millisecond, 250*time.Millisecond, cond)
}

// EventuallyEvery is Eventually asking cond once every interval, for a
// cond that costs (a request under a rate limit, a page's script).
func EventuallyEvery(t testing.TB, what string, timeout, every time.Duration, cond func() bool) {
	t.Helper()
	eventually(t, what, timeout, every, every, cond)
}

func eventually(t testing.TB, what string, timeout, first, most time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for pause := first; !cond(); pause = min(2*pause, most) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(pause)
	}
}
