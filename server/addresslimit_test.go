package server_test

import (
	"strconv"
	"testing"
)

// Guessing keys from one address is stopped after a few failures, while
// another address, and a good key from the same address, go on.
func TestFailedKeysAreThrottledPerAddress(t *testing.T) {
	t.Parallel()
	a := appWithEnv(t, "TRUSTED_PROXIES", "127.0.0.1/32", "RATE_AUTH_FAILURES_PER_MINUTE", "6", "RATE_AUTH_FAILURES_BURST", "3")
	key := a.user("ana@example.org", false)
	from := func(addr string) []string { return []string{"X-Forwarded-For", addr} }
	guesser, other := from("203.0.113.7"), from("198.51.100.9")

	for range 3 {
		expect(t, a.do("GET", "/v1/projects", "lbx_guess", nil, guesser...), 401, "invalid_credentials")
	}
	expectRetryAfter(t, a.do("GET", "/v1/projects", "lbx_guess", nil, guesser...))
	// Sign-in and stream tokens are the same credential, with the same budget.
	expectRetryAfter(t, a.do("POST", "/v1/session", "", map[string]string{"apiKey": "lbx_guess"}, guesser...))
	expectRetryAfter(t, a.do("GET", "/v1/realtime?accessToken=guess", "", nil, guesser...))
	expectRetryAfter(t, a.do("GET", "/v1/projects", "", nil, append(guesser, "Authorization", "Basic eDp5")...))

	expect(t, a.do("GET", "/v1/projects", "lbx_guess", nil, other...), 401, "invalid_credentials")
	expect(t, a.do("GET", "/v1/projects", key, nil, guesser...), 200, "")
}

// Without a trusted proxy, X-Forwarded-For names nobody: changing it does
// not buy a fresh budget.
func TestForwardedForFromAnUntrustedPeerDoesNotEscapeTheThrottle(t *testing.T) {
	t.Parallel()
	a := appWithEnv(t, "RATE_AUTH_FAILURES_PER_MINUTE", "6", "RATE_AUTH_FAILURES_BURST", "3")
	for i := range 3 {
		expect(t, a.do("GET", "/v1/projects", "lbx_guess", nil, "X-Forwarded-For", "203.0.113."+strconv.Itoa(i)), 401, "invalid_credentials")
	}
	expectRetryAfter(t, a.do("GET", "/v1/projects", "lbx_guess", nil, "X-Forwarded-For", "203.0.113.99"))
}

// Signing in and /readyz need no key, so their budgets are per address.
func TestSignInAndReadyzAreThrottledPerAddress(t *testing.T) {
	t.Parallel()
	a := appWithEnv(t, "TRUSTED_PROXIES", "127.0.0.1/32", "RATE_SIGNIN_PER_MINUTE", "6", "RATE_SIGNIN_BURST", "2",
		"RATE_READYZ_PER_MINUTE", "6", "RATE_READYZ_BURST", "2")
	key := a.user("ana@example.org", false)
	signIn := func(addr string) reply {
		return a.do("POST", "/v1/session", "", map[string]string{"apiKey": key}, "X-Forwarded-For", addr)
	}
	expect(t, signIn("203.0.113.7"), 201, "")
	expect(t, signIn("203.0.113.7"), 201, "")
	expectRetryAfter(t, signIn("203.0.113.7"))
	expect(t, signIn("198.51.100.9"), 201, "")

	readyz := func(addr string) reply { return a.do("GET", "/readyz", "", nil, "X-Forwarded-For", addr) }
	expect(t, readyz("203.0.113.7"), 200, "")
	expect(t, readyz("203.0.113.7"), 200, "")
	expectRetryAfter(t, readyz("203.0.113.7"))
	expect(t, readyz("198.51.100.9"), 200, "")
}
