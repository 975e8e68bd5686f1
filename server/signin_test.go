package server_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"lightbox/internal/testenv"
)

// mailedCode waits for the next sign-in mail and returns its code.
func mailedCode(t *testing.T, mails <-chan testenv.Mail, to string) string {
	t.Helper()
	select {
	case m := <-mails:
		if len(m.To) != 1 || m.To[0] != to {
			t.Fatalf("a mail to %v, want %s", m.To, to)
		}
		code := regexp.MustCompile(`sign-in code is (\d{6})\.`).FindStringSubmatch(m.Data)
		if code == nil {
			t.Fatalf("no code in the mail:\n%s", m.Data)
		}
		return code[1]
	case <-time.After(3 * time.Minute):
		t.Fatal("no sign-in mail arrived")
		return ""
	}
}

func TestSignInByMailedCode(t *testing.T) {
	smtpURL, mails := testenv.SMTP(t)
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{"SMTP_URL": smtpURL, "MAIL_FROM": "Lightbox <no-reply@example.org>"}})
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
	verify := func(challenge, code string) reply {
		return a.do("POST", "/v1/auth/verify", "", map[string]any{"challengeId": challenge, "code": code})
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
	tokens := r.json(t)
	access, refresh := tokens["accessToken"].(string), tokens["refreshToken"].(string)
	if tokens["user"].(map[string]any)["email"] != "ana@example.org" || access == "" || refresh == "" {
		t.Fatalf("verify: %s", r.body)
	}
	expect(t, verify(challenge, code), 401, "code_expired") // once only
	r = a.do("GET", "/v1/session", access, nil)
	expect(t, r, 200, "")
	if r.json(t)["user"].(map[string]any)["email"] != "ana@example.org" {
		t.Fatalf("session with the access token: %s", r.body)
	}

	// Refreshing gives a new pair; the old refresh token coming back means
	// a copy exists, so the device's key is revoked.
	r = a.do("POST", "/v1/auth/refresh", "", map[string]any{"refreshToken": refresh})
	expect(t, r, 200, "")
	next := r.json(t)["accessToken"].(string)
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

	// Codes to one address are limited: five in ten minutes.
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

// mailApp is an app that mails sign-in codes to a test SMTP server.
func mailApp(t *testing.T, env ...string) (*app, <-chan testenv.Mail) {
	t.Helper()
	smtpURL, mails := testenv.SMTP(t)
	vars := map[string]string{"SMTP_URL": smtpURL, "MAIL_FROM": "Lightbox <no-reply@example.org>"}
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	e := testenv.New(t)
	return startAppWith(t, e, e.Redis, options{env: vars}), mails
}

// signIn signs email in by the mailed code, as a device would, and
// returns its access and refresh tokens.
func (a *app) signIn(t *testing.T, mails <-chan testenv.Mail, email string, headers ...string) (access, refresh string) {
	t.Helper()
	r := a.do("POST", "/v1/auth/login", "", map[string]any{"email": email}, headers...)
	expect(t, r, 200, "")
	challenge := r.json(t)["challengeId"].(string)
	r = a.do("POST", "/v1/auth/verify", "", map[string]any{"challengeId": challenge, "code": mailedCode(t, mails, email)}, headers...)
	expect(t, r, 200, "")
	m := r.json(t)
	return m["accessToken"].(string), m["refreshToken"].(string)
}
