package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestWebSignInByMailedCode: a person signs in to the web app with their
// email and the code it receives, as the API has let apps do since the
// seed's sign-in; kept, the cookie outlives the browser, otherwise it ends
// with it; signing out ends the session and revokes the key it was made
// with. A wrong code is refused and makes no session.
func TestWebSignInByMailedCode(t *testing.T) {
	t.Parallel()
	a, mails := mailApp(t, options{})
	a.user("ana@example.org", false)
	for _, keep := range []bool{false, true} {
		r := a.do("POST", "/v1/auth/login", "", map[string]any{"email": "ana@example.org"})
		expect(t, r, 200, "")
		challenge := decode[struct{ ChallengeID string }](t, r).ChallengeID
		code := mailedCode(t, mails, "ana@example.org")
		wrong := "000000"
		if code == wrong {
			wrong = "111111"
		}
		r = a.do("POST", "/v1/session", "", map[string]any{"challengeId": challenge, "code": wrong, "keep": keep})
		expect(t, r, 401, "invalid_code")
		if len(r.header.Values("Set-Cookie")) != 0 {
			t.Fatal("a wrong code set a cookie")
		}
		r = a.do("POST", "/v1/session", "", map[string]any{"challengeId": challenge, "code": code, "keep": keep})
		expect(t, r, 201, "")
		cookies := (&http.Response{Header: r.header}).Cookies()
		if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].Expires.IsZero() != !keep {
			t.Fatalf("keep %v: cookie %+v, want one that outlives the browser only when kept", keep, cookies)
		}
		cookie := cookies[0].Name + "=" + cookies[0].Value
		r = a.do("GET", "/v1/session", "", nil, "Cookie", cookie)
		expect(t, r, 200, "")
		if !strings.Contains(string(r.body), "ana@example.org") {
			t.Fatalf("the session is %s", r.body)
		}
		expect(t, a.do("POST", "/v1/session", "", map[string]any{"challengeId": challenge, "code": code}), 401, "code_expired")
		r = a.do("DELETE", "/v1/session", "", nil, "Cookie", cookie)
		if r.status != 204 {
			t.Fatalf("sign out: %d %s", r.status, r.body)
		}
		expect(t, a.do("GET", "/v1/session", "", nil, "Cookie", cookie), 401, "")
		if n := a.count(`SELECT count(*) FROM api_keys WHERE name LIKE 'web sign-in %' AND revoked_at IS NULL`); n != 0 {
			t.Errorf("%d web sign-in keys outlive signing out", n)
		}
	}
}
