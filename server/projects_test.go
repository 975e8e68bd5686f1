package server_test

import (
	"bytes"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestProjectCRUD(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)

	r := a.do("POST", "/v1/projects", key, map[string]any{
		"title": "  Wedding ", "description": "June", "shootDate": "2026-06-21", "timezone": "Europe/Paris",
	})
	expect(t, r, 201, "")
	p := r.json(t)
	id := p["id"].(string)
	if p["title"] != "Wedding" || p["shootDate"] != "2026-06-21" || p["timezone"] != "Europe/Paris" || p["status"] != "active" {
		t.Fatalf("created project %v", p)
	}
	if stats := p["stats"].(map[string]any); stats["total"] != 0.0 {
		t.Fatalf("stats %v", stats)
	}
	if !strings.HasSuffix(p["createdAt"].(string), "Z") {
		t.Fatalf("createdAt not UTC: %v", p["createdAt"])
	}

	r = a.do("GET", "/v1/projects/"+id, key, nil)
	expect(t, r, 200, "")

	r = a.do("PATCH", "/v1/projects/"+id, key, map[string]any{"description": "June 21", "shootDate": nil})
	expect(t, r, 200, "")
	p = r.json(t)
	if p["description"] != "June 21" || p["shootDate"] != nil || p["title"] != "Wedding" {
		t.Fatalf("patched project %v", p)
	}

	r = a.do("POST", "/v1/projects/"+id+"/archive", key, nil)
	expect(t, r, 200, "")
	if r.json(t)["status"] != "archived" {
		t.Fatalf("archive: %s", r.body)
	}
}

func TestProjectValidation(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)

	r := a.do("POST", "/v1/projects", key, map[string]any{"title": "", "shootDate": "21/06/2026", "timezone": "Mars/Base"})
	expect(t, r, 400, "validation_failed")
	fields := details(t, r)["fields"].(map[string]any)
	for _, f := range []string{"title", "shootDate", "timezone"} {
		if fields[f] == nil {
			t.Errorf("validation does not name %s: %s", f, r.body)
		}
	}

	r = a.do("POST", "/v1/projects", key, `{"title": "x", "colour": "red"}`)
	expect(t, r, 400, "invalid_json")
	if details(t, r)["field"] != "colour" {
		t.Fatalf("unknown field not named: %s", r.body)
	}
	r = a.do("POST", "/v1/projects", key, `{"title": "x",`)
	expect(t, r, 400, "invalid_json")
	r = a.do("POST", "/v1/projects", key, `{"title": 12}`)
	expect(t, r, 400, "validation_failed")
	if details(t, r)["fields"].(map[string]any)["title"] == nil {
		t.Fatalf("wrong type not named: %s", r.body)
	}
	expect(t, a.do("POST", "/v1/projects", key, ""), 400, "invalid_json")
	expect(t, a.do("POST", "/v1/projects", key, `{"title":"x"} {"title":"y"}`), 400, "invalid_json")
	big := `{"title": "` + strings.Repeat("x", int(a.cfg.MaxBodyBytes)) + `"}`
	expect(t, a.do("POST", "/v1/projects", key, big), 413, "body_too_large")
	expect(t, a.do("PATCH", "/v1/projects/not-a-uuid", key, `{}`), 404, "not_found")

	r = a.do("POST", "/v1/projects", key, map[string]any{"title": "ok"})
	id := decode[created](t, r).ID
	expect(t, a.do("PATCH", "/v1/projects/"+id, key, map[string]any{"status": "gone", "title": nil}), 400, "validation_failed")
}

func TestProjectPagination(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	for i := range 7 {
		expect(t, a.do("POST", "/v1/projects", key, map[string]any{"title": fmt.Sprintf("P%d", i)}), 201, "")
	}

	var titles []string
	cursor := ""
	pages := 0
	for {
		r := a.do("GET", "/v1/projects?limit=3&cursor="+url.QueryEscape(cursor), key, nil)
		expect(t, r, 200, "")
		page := r.json(t)
		for _, it := range page["items"].([]any) {
			titles = append(titles, it.(map[string]any)["title"].(string))
		}
		pages++
		next := page["pageInfo"].(map[string]any)["nextCursor"]
		if next == nil {
			break
		}
		cursor = next.(string)
	}
	if pages != 3 || strings.Join(titles, ",") != "P6,P5,P4,P3,P2,P1,P0" {
		t.Fatalf("%d pages, titles %v", pages, titles)
	}

	expect(t, a.do("GET", "/v1/projects?limit=0", key, nil), 400, "validation_failed")
	expect(t, a.do("GET", "/v1/projects?limit=1001", key, nil), 400, "validation_failed")
	expect(t, a.do("GET", "/v1/projects?cursor=garbage", key, nil), 400, "invalid_cursor")
}

func TestOtherUsersProjectIs404OnEveryRoute(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ana := a.user("ana@example.org", false)
	bob := a.user("bob@example.org", true) // even an admin sees only their own projects here

	id := a.do("POST", "/v1/projects", ana, map[string]any{"title": "Ana's"}).json(t)["id"].(string)
	for _, rt := range []struct{ method, path string }{
		{"GET", "/v1/projects/" + id},
		{"PATCH", "/v1/projects/" + id},
		{"POST", "/v1/projects/" + id + "/archive"},
	} {
		expect(t, a.do(rt.method, rt.path, bob, `{"title":"mine now"}`), 404, "not_found")
	}
	r := a.do("GET", "/v1/projects", bob, nil)
	if n := len(decode[pageOf[any]](t, r).Items); n != 0 {
		t.Fatalf("bob lists %d of ana's projects", n)
	}
	if got := a.do("GET", "/v1/projects/"+id, ana, nil).json(t)["title"]; got != "Ana's" {
		t.Fatalf("ana's project changed: %v", got)
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	body := map[string]any{"title": "Once"}

	first := a.do("POST", "/v1/projects", key, body, "Idempotency-Key", "k-1")
	expect(t, first, 201, "")
	again := a.do("POST", "/v1/projects", key, body, "Idempotency-Key", "k-1")
	expect(t, again, 201, "")
	if string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay differs:\n%s\n%s", first.body, again.body)
	}
	r := a.do("GET", "/v1/projects", key, nil)
	if n := len(decode[pageOf[any]](t, r).Items); n != 1 {
		t.Fatalf("%d projects after a replayed create, want 1", n)
	}

	expect(t, a.do("POST", "/v1/projects", key, map[string]any{"title": "Twice"}, "Idempotency-Key", "k-1"), 422, "idempotency_key_reused")

	// Keys are per user: another user's identical key is a new request.
	bob := a.user("bob@example.org", false)
	expect(t, a.do("POST", "/v1/projects", bob, body, "Idempotency-Key", "k-1"), 201, "")

	// A failed request (4xx) is replayed as the same failure.
	bad := a.do("POST", "/v1/projects", key, map[string]any{"title": ""}, "Idempotency-Key", "k-2")
	expect(t, bad, 400, "validation_failed")
	replay := a.do("POST", "/v1/projects", key, map[string]any{"title": ""}, "Idempotency-Key", "k-2")
	if replay.status != 400 || string(replay.body) != string(bad.body) {
		t.Fatalf("replayed failure %d %s, want the first answer %s", replay.status, replay.body, bad.body)
	}
}

// Every POST of a signed-in caller replays its first answer under the same
// Idempotency-Key, as the contract says of every POST: a retried create,
// retry or cancel is done once. The public routes (sign-in, galleries)
// have no account to keep an answer under.
func TestEveryPOSTReplaysUnderItsKey(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("admin@example.org", true)
	for _, rt := range a.srv.Routes() {
		if rt.Method != "POST" || !strings.HasPrefix(rt.Path, "/v1/") || rt.Path == "/v1/session" ||
			strings.HasPrefix(rt.Path, "/v1/auth/") || strings.HasPrefix(rt.Path, "/v1/share/") {
			continue
		}
		path := pathParam.ReplaceAllStringFunc(openAPIPath(rt.Path), func(string) string { return uuid.NewString() })
		first := a.do("POST", path, key, map[string]any{}, "Idempotency-Key", "key-"+path)
		again := a.do("POST", path, key, map[string]any{}, "Idempotency-Key", "key-"+path)
		if again.header.Get("Idempotent-Replayed") != "true" || again.status != first.status || !bytes.Equal(again.body, first.body) {
			t.Errorf("POST %s: %d %s, then %d %s without a replay", rt.Path, first.status, first.body, again.status, again.body)
		}
	}
}

// pathParam is a parameter of a path as openapi.yaml writes it.
var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// The creates the contract's "every POST" missed: an edit, its applyTo and
// a webhook ping sent twice under one key make one version, one batch and
// one delivery.
func TestRetriedCreatesHappenOnce(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))
	twice := func(path string, body any) reply {
		t.Helper()
		first := a.do("POST", path, key, body, "Idempotency-Key", "once-"+path)
		again := a.do("POST", path, key, body, "Idempotency-Key", "once-"+path)
		if first.status >= 300 || again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.body, first.body) {
			t.Fatalf("POST %s: %d %s, then %d %s", path, first.status, first.body, again.status, again.body)
		}
		return first
	}

	edit := twice("/v1/assets/"+ups[0].AssetID+"/edits", map[string]any{"params": map[string]any{"exposure": 0.5}}).json(t)["id"].(string)
	twice("/v1/edits/"+edit+"/applyTo", map[string]any{"assetIds": []string{ups[1].AssetID}, "mode": "create_versions"})
	if n := a.count(`SELECT count(*) FROM edit_versions`); n != 2 {
		t.Fatalf("%d edit versions, want 2", n)
	}
	if n := a.count(`SELECT count(*) FROM jobs WHERE type = 'edit:apply'`); n != 2 {
		t.Fatalf("%d render jobs, want 2", n)
	}

	r := a.do("POST", "/v1/webhooks", key, map[string]any{"url": "https://example.com/hook", "events": []string{"batch.completed"}})
	expect(t, r, 201, "")
	twice("/v1/webhooks/"+decode[created](t, r).ID+"/test", nil)
	if n := a.count(`SELECT count(*) FROM webhook_deliveries`); n != 1 {
		t.Fatalf("%d deliveries, want 1", n)
	}
}
