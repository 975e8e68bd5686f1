package server_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"lightbox/testsupport/testenv"
)

func TestSignInByMailedCode(t *testing.T) {
	t.Parallel()
	clock := newClock()
	a, mails := mailApp(t, options{now: clock.Now})
	a.user("ana@example.org", false)
	login := func(email string) string {
		t.Helper()
		r := a.do("POST", "/v1/auth/login", "", map[string]any{"email": email})
		expect(t, r, 200, "")
		got := r.json(t)
		if got["delivery"] != "email_code" || got["challengeId"] == "" || len(got) != 2 {
			t.Fatalf("login: %s", r.body)
		}
		return got["challengeId"].(string)
	}
	// verify waits as long as the server says when it slows the tries down.
	verify := func(challenge, code string) reply {
		t.Helper()
		for range 10 {
			r := a.do("POST", "/v1/auth/verify", "", map[string]any{"challengeId": challenge, "code": code})
			if r.status != 429 {
				return r
			}
			clock.Advance(retryAfter(t, r))
		}
		t.Fatal("still told to wait after 10 waits")
		return reply{}
	}

	// An unknown address gets the same answer, and no mail; its challenge
	// fails like a wrong code.
	nobody := login("nobody@example.org")
	challenge := login("ana@example.org")
	code := mailedCode(t, mails, "ana@example.org")
	expect(t, verify(nobody, code), 401, "invalid_code")
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	expect(t, verify(challenge, wrong), 401, "invalid_code")

	r := verify(challenge, code)
	expect(t, r, 200, "")
	tokens := decode[signedIn](t, r)
	access, refresh := tokens.AccessToken, tokens.RefreshToken
	if tokens.User.Email != "ana@example.org" || access == "" || refresh == "" {
		t.Fatalf("verify: %s", r.body)
	}
	expect(t, verify(challenge, code), 401, "code_expired") // once only
	r = a.do("GET", "/v1/session", access, nil)
	expect(t, r, 200, "")
	if decode[signedIn](t, r).User.Email != "ana@example.org" {
		t.Fatalf("session with the access token: %s", r.body)
	}

	// Refreshing gives a new pair; the old refresh token coming back means
	// a copy exists, so the device's key is revoked.
	r = a.do("POST", "/v1/auth/refresh", "", map[string]any{"refreshToken": refresh})
	expect(t, r, 200, "")
	next := decode[signedIn](t, r).AccessToken
	expect(t, a.do("GET", "/v1/projects", next, nil), 200, "")
	expect(t, a.do("POST", "/v1/auth/refresh", "", map[string]any{"refreshToken": refresh}), 401, "refresh_reused")
	expect(t, a.do("GET", "/v1/projects", next, nil), 401, "token_expired")
	expect(t, a.do("POST", "/v1/auth/refresh", "", map[string]any{"refreshToken": "lbr_unknown"}), 401, "invalid_refresh_token")

	// Five wrong tries spend a challenge, right code or not.
	challenge = login("ana@example.org")
	code = mailedCode(t, mails, "ana@example.org")
	for range 5 {
		expect(t, verify(challenge, wrong), 401, "invalid_code")
	}
	expect(t, verify(challenge, code), 401, "code_expired")

	for _, c := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/auth/login", map[string]any{"email": "not an address"}},
		{"/v1/auth/login", map[string]any{"email": "Ana <ana@example.org>"}},
		{"/v1/auth/verify", map[string]any{"challengeId": challenge, "code": "12ab56"}},
		{"/v1/auth/verify", map[string]any{"code": "123456"}},
		{"/v1/auth/refresh", map[string]any{"refreshToken": access}},
	} {
		expect(t, a.do("POST", c.path, "", c.body), 400, "validation_failed")
	}

	// Codes to one address from one client are limited: five an hour.
	for range 3 {
		login("ANA@example.org")
		mailedCode(t, mails, "ANA@example.org")
	}
	r = a.do("POST", "/v1/auth/login", "", map[string]any{"email": "ana@example.org"})
	expect(t, r, 429, "rate_limited")
	if r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "retryAfter") {
		t.Fatalf("429 without Retry-After: %v %s", r.header, r.body)
	}
}

// clock is a time a test moves by hand, for the sign-in throttle.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// retryAfter is the wait a 429 announces, failing t unless it has one.
func retryAfter(t *testing.T, r reply) time.Duration {
	t.Helper()
	s, err := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != 429 || err != nil || s < 1 {
		t.Fatalf("want a 429 with Retry-After; got %d %v %s", r.status, r.header, r.body)
	}
	return time.Duration(s) * time.Second
}

// guessRun plays an attacker guessing mailbox's sign-in codes for d of the
// clock's time: it asks for a code, tries wrong ones from the client
// addresses addrs in turn (X-Forwarded-For, through a trusted proxy), asks
// for another code when one is spent, and, when every address is told to
// wait, moves the clock by the shortest Retry-After announced. It returns
// when each wrong code was checked, from the start, and why it stopped
// early, if it did.
func guessRun(t *testing.T, a *app, c *clock, mails <-chan testenv.Mail, mailbox string, addrs []string, d time.Duration) (tries []time.Duration, stopped string) {
	t.Helper()
	start := c.Now()
	from := func(i int) []string { return []string{"X-Forwarded-For", addrs[i%len(addrs)]} }
	challenge, wrong := "", ""
	for c.Now().Sub(start) < d {
		if challenge == "" {
			r := a.do("POST", "/v1/auth/login", "", map[string]any{"email": mailbox}, from(len(tries))...)
			if r.status != 200 {
				return tries, fmt.Sprintf("a code was refused after %v: %d %s", c.Now().Sub(start), r.status, r.body)
			}
			challenge, wrong = r.json(t)["challengeId"].(string), "000000"
			if mailedCode(t, mails, mailbox) == wrong {
				wrong = "111111"
			}
		}
		var soonest time.Duration
		for i := range addrs {
			r := a.do("POST", "/v1/auth/verify", "", map[string]any{"challengeId": challenge, "code": wrong}, from(i)...)
			if r.status == 429 {
				if w := retryAfter(t, r); soonest == 0 || w < soonest {
					soonest = w
				}
				continue
			}
			expect(t, r, 401, "")
			switch code := r.json(t)["code"]; code {
			case "invalid_code":
				tries = append(tries, c.Now().Sub(start))
			case "code_expired":
				challenge = ""
			default:
				t.Fatalf("verify: %s", r.body)
			}
			soonest = 0
			break
		}
		c.Advance(soonest)
	}
	return tries, ""
}

// mostInAnHour is the most tries of any hour of the run, and the hour's start.
func mostInAnHour(tries []time.Duration) (most int, from time.Duration) {
	for _, s := range tries {
		n := 0
		for _, x := range tries {
			if x >= s && x < s+time.Hour {
				n++
			}
		}
		if n > most {
			most, from = n, s
		}
	}
	return most, from
}

// An attacker at one address asks for a code of an admin's mailbox and
// tries five wrong codes, again and again, for three hours of the clock:
// the tries counted across the codes are slowed down to fewer than 10 an
// hour. Meanwhile the admin's device keeps its refresh token and API key,
// and the admin signing in afresh from another address gets a code and
// signs in at once.
func TestGuessingSignInCodesFromOneAddress(t *testing.T) {
	t.Parallel()
	c := newClock()
	a, mails := mailApp(t, options{now: c.Now, env: map[string]string{"TRUSTED_PROXIES": "127.0.0.1/32", "RATE_SIGNIN_BURST": "10000"}})
	const mailbox = "root@example.org"
	key := a.user(mailbox, true)
	owner := []string{"X-Forwarded-For", "198.51.100.9"}
	_, refresh := a.signIn(t, mails, mailbox, owner...)

	attacker := []string{"X-Forwarded-For", "203.0.113.7"}
	tries, stopped := guessRun(t, a, c, mails, mailbox, attacker[1:], 3*time.Hour)
	most, from := mostInAnHour(tries)
	t.Logf("%d wrong codes checked in 3 h from one address, %d at most in an hour (from %v): %v", len(tries), most, from, tries)
	if most >= 10 {
		t.Errorf("%d wrong codes checked in the hour from %v, want fewer than 10", most, from)
	}
	if stopped != "" {
		t.Fatalf("the run stopped early, so its figure says little: %s", stopped)
	}

	// The owner, from another address: the device signed in before, its
	// API key, and a fresh sign-in by a mailed code, answered at once.
	r := a.do("POST", "/v1/auth/refresh", "", map[string]any{"refreshToken": refresh}, owner...)
	expect(t, r, 200, "")
	expect(t, a.do("GET", "/v1/projects", decode[signedIn](t, r).AccessToken, nil, owner...), 200, "")
	expect(t, a.do("GET", "/v1/projects", key, nil, owner...), 200, "")
	a.signIn(t, mails, mailbox, owner...)

	// The owner signing in took nothing off the attacker's count: the
	// attack goes on an hour apart.
	r = a.do("POST", "/v1/auth/login", "", map[string]any{"email": mailbox}, attacker...)
	expect(t, r, 200, "")
	challenge, wrong := r.json(t)["challengeId"], "000000"
	if mailedCode(t, mails, mailbox) == wrong {
		wrong = "111111"
	}
	for i := 0; ; i++ {
		r = a.do("POST", "/v1/auth/verify", "", map[string]any{"challengeId": challenge, "code": wrong}, attacker...)
		if r.status == 429 {
			if wait := retryAfter(t, r); wait < 30*time.Minute {
				t.Fatalf("after the owner signed in, the attacker waits %v for the next try", wait)
			}
			break
		}
		expect(t, r, 401, "invalid_code")
		if i > 0 {
			t.Fatal("after the owner signed in, the attacker tried twice without a wait")
		}
	}
}

// Guessing one mailbox's codes from ten addresses at once is slowed per
// mailbox: the first hour lets a few more tries through than one address
// gets, then about 6 an hour.
func TestGuessingSignInCodesFromManyAddresses(t *testing.T) {
	t.Parallel()
	c := newClock()
	a, mails := mailApp(t, options{now: c.Now, env: map[string]string{"TRUSTED_PROXIES": "127.0.0.1/32", "RATE_SIGNIN_BURST": "10000"}})
	const mailbox = "ana@example.org"
	a.user(mailbox, false)
	addrs := make([]string, 10)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("203.0.113.%d", i+1)
	}
	tries, stopped := guessRun(t, a, c, mails, mailbox, addrs, 3*time.Hour)
	most, from := mostInAnHour(tries)
	var later []time.Duration
	for _, x := range tries {
		if x >= time.Hour {
			later = append(later, x)
		}
	}
	mostLater, laterFrom := mostInAnHour(later)
	t.Logf("%d wrong codes checked in 3 h from %d addresses: %d at most in an hour (from %v), %d at most in an hour after the first: %v",
		len(tries), len(addrs), most, from, mostLater, tries)
	if most >= 20 || mostLater >= 10 {
		t.Errorf("%d wrong codes in the hour from %v and %d in the hour from %v; want fewer than 20 in the first hour, fewer than 10 in any later one",
			most, from, mostLater, laterFrom)
	}
	if stopped != "" {
		t.Fatalf("the run stopped early, so its figure says little: %s", stopped)
	}
}
