package server_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestAuthRefusals(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)

	expect(t, a.do("GET", "/v1/projects", "", nil), 401, "unauthenticated")
	expect(t, a.do("GET", "/v1/projects", "lbx_notakey", nil), 401, "invalid_credentials")
	expect(t, a.do("GET", "/v1/projects", "", nil, "Authorization", "Basic abc"), 401, "invalid_credentials")
	expect(t, a.do("GET", "/v1/projects", key, nil), 200, "")
	// The scheme's name is case-insensitive.
	expect(t, a.do("GET", "/v1/projects", "", nil, "Authorization", "bearer "+key), 200, "")
	expect(t, a.do("GET", "/v1/projects", "", nil, "Authorization", "Bearer"), 401, "invalid_credentials")

	a.revoke(key)
	expect(t, a.do("GET", "/v1/projects", key, nil), 401, "invalid_credentials")
}

func TestSessionCookie(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)

	expect(t, a.do("POST", "/v1/session", "", map[string]string{"apiKey": "lbx_wrong"}), 401, "invalid_credentials")
	r := a.do("POST", "/v1/session", "", map[string]string{"apiKey": key})
	expect(t, r, 201, "")
	setCookie := r.header.Get("Set-Cookie")
	for _, want := range []string{"lightbox_session=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(setCookie, want) {
			t.Fatalf("Set-Cookie %q lacks %s", setCookie, want)
		}
	}
	cookie := strings.SplitN(setCookie, ";", 2)[0]

	r = a.do("GET", "/v1/session", "", nil, "Cookie", cookie)
	expect(t, r, 200, "")
	if got := decode[signedIn](t, r).User.Email; got != "ana@example.org" {
		t.Fatalf("session user %v", got)
	}
	expect(t, a.do("POST", "/v1/projects", "", map[string]string{"title": "By cookie"}, "Cookie", cookie), 201, "")

	// Signing out ends the session for good.
	expect(t, a.do("DELETE", "/v1/session", "", nil, "Cookie", cookie), http.StatusNoContent, "")
	expect(t, a.do("GET", "/v1/projects", "", nil, "Cookie", cookie), 401, "session_expired")
}

func TestRevokingAKeyEndsItsSessions(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	r := a.do("POST", "/v1/session", key, nil)
	expect(t, r, 201, "")
	cookie := strings.SplitN(r.header.Get("Set-Cookie"), ";", 2)[0]

	a.revoke(key)
	expect(t, a.do("GET", "/v1/projects", "", nil, "Cookie", cookie), 401, "session_expired")
}

func TestRequestIDOnEveryAnswer(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.do("GET", "/healthz", "", nil)
	if len(r.header.Get("X-Request-Id")) < 8 {
		t.Fatalf("no request id on /healthz: %v", r.header)
	}
	r = a.do("GET", "/v1/nothing-here", "", nil, "X-Request-Id", "client-chosen-42")
	expect(t, r, 404, "route_not_found")
	if r.header.Get("X-Request-Id") != "client-chosen-42" {
		t.Fatalf("request id not kept: %q", r.header.Get("X-Request-Id"))
	}
}

// Another app on the same site makes the browser send the session cookie
// with its own writes: they are refused, while the pages' own calls and
// Bearer clients go through.
func TestCrossOriginCookieWritesAreRefused(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	r := a.do("POST", "/v1/session", "", map[string]string{"apiKey": key})
	expect(t, r, 201, "")
	cookie := strings.SplitN(r.header.Get("Set-Cookie"), ";", 2)[0]
	body := map[string]string{"title": "Forged"}

	for _, h := range [][]string{
		{"Origin", "https://other.example.org"},
		{"Origin", "null"},
		{"Sec-Fetch-Site", "cross-site", "Origin", "https://other.example.org"},
		{"Sec-Fetch-Site", "same-site", "Origin", "https://app.example.org"},
		{"Sec-Fetch-Site", "same-site"},
	} {
		expect(t, a.do("POST", "/v1/projects", "", body, append([]string{"Cookie", cookie}, h...)...), 403, "cross_origin")
	}
	expect(t, a.do("GET", "/v1/projects", "", nil, "Cookie", cookie, "Sec-Fetch-Site", "cross-site"), 200, "")
	if n := len(decode[pageOf[any]](t, a.do("GET", "/v1/projects", key, nil)).Items); n != 0 {
		t.Fatalf("%d projects created by refused requests", n)
	}

	expect(t, a.do("POST", "/v1/projects", "", body, "Cookie", cookie, "Origin", a.url, "Sec-Fetch-Site", "same-origin"), 201, "")
	expect(t, a.do("POST", "/v1/projects", "", body, "Cookie", cookie, "Origin", a.url), 201, "")
	expect(t, a.do("POST", "/v1/projects", key, body, "Origin", "https://other.example.org", "Sec-Fetch-Site", "cross-site"), 201, "")
}

// A page of any site may POST text/plain or a form without asking; a JSON
// endpoint must not read such a body as JSON.
func TestJSONEndpointsRefuseOtherContentTypes(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
		expect(t, a.do("POST", "/v1/projects", key, `{"title":"Smuggled"}`, "Content-Type", ct), 415, "unsupported_media_type")
		expect(t, a.do("POST", "/v1/session", "", `{"apiKey":"`+key+`"}`, "Content-Type", ct), 415, "unsupported_media_type")
	}
	expect(t, a.do("POST", "/v1/projects", key, `{"title":"Labelled"}`, "Content-Type", "application/json; charset=utf-8"), 201, "")
	expect(t, a.do("POST", "/v1/projects", key, `{"title":"Labelled"}`, "Content-Type", "application/merge-patch+json"), 201, "")
}

// An access token from a mailed code lasts an hour; it must not become a
// week-long cookie session, in the body or as the Bearer header.
func TestAccessTokenMakesNoSession(t *testing.T) {
	t.Parallel()
	a, mails := mailApp(t, options{})
	key := a.user("ana@example.org", false)
	access, refresh := a.signIn(t, mails, "ana@example.org")

	for _, r := range []reply{
		a.do("POST", "/v1/session", "", map[string]string{"apiKey": access}),
		a.do("POST", "/v1/session", access, nil),
		a.do("POST", "/v1/session", "", map[string]string{"apiKey": refresh}),
	} {
		expect(t, r, 401, "invalid_credentials")
		if c := r.header.Get("Set-Cookie"); c != "" {
			t.Fatalf("a refused session set a cookie: %s", c)
		}
	}
	if n := a.count(`SELECT count(*) FROM sessions s JOIN api_keys k ON k.id = s.api_key_id WHERE k.name LIKE 'sign-in %'`); n != 1 {
		t.Fatalf("%d sessions of the signed-in device, want its one access token", n)
	}
	expect(t, a.do("POST", "/v1/session", "", map[string]string{"apiKey": key}), 201, "")
}

// Signing out ends the credential that signed out: a device signed in by
// mail loses its access token and its refresh token, while the user's
// other devices and API keys go on. An API key is not a session.
func TestSignOutRevokesTheAccessToken(t *testing.T) {
	t.Parallel()
	a, mails := mailApp(t, options{})
	key := a.user("ana@example.org", false)
	access, refresh := a.signIn(t, mails, "ana@example.org")
	otherAccess, otherRefresh := a.signIn(t, mails, "ana@example.org")
	// An older access token of the same device, from a refresh.
	r := a.do("POST", "/v1/auth/refresh", "", map[string]any{"refreshToken": refresh})
	expect(t, r, 200, "")
	tokens := decode[signedIn](t, r)
	refreshed, refresh := tokens.AccessToken, tokens.RefreshToken

	expect(t, a.do("DELETE", "/v1/session", refreshed, nil), 204, "")
	for _, token := range []string{refreshed, access} {
		expect(t, a.do("GET", "/v1/projects", token, nil), 401, "token_expired")
	}
	expect(t, a.do("POST", "/v1/auth/refresh", "", map[string]any{"refreshToken": refresh}), 401, "invalid_refresh_token")

	expect(t, a.do("GET", "/v1/projects", otherAccess, nil), 200, "")
	expect(t, a.do("POST", "/v1/auth/refresh", "", map[string]any{"refreshToken": otherRefresh}), 200, "")
	expect(t, a.do("DELETE", "/v1/session", key, nil), 400, "not_a_session")
	expect(t, a.do("GET", "/v1/projects", key, nil), 200, "")
}
