package server_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/google/uuid"

	"lightbox/store"
)

// inputFixture is one user's project with two processed photos, a
// duplicate group of them, and a gallery showing the first with a viewer
// token: something for every route that takes text to reach.
type inputFixture struct {
	key, project, slug, viewer, cluster string
	assets                              []uuid.UUID
}

func newInputFixture(t *testing.T, a *app) inputFixture {
	t.Helper()
	f := inputFixture{key: a.user("ana@example.org", false)}
	f.project = a.newProject(f.key)
	f.assets = processed(t, a, f.key, f.project, []string{"Canon", "Nikon"}, [][]float32{{1, 0}, {0, 1}})
	if _, _, err := a.env.Store.ReplaceClusters(context.Background(), uuid.MustParse(f.project), 1,
		[]store.NewCluster{group("Duplicates", f.assets...)}, nil); err != nil {
		t.Fatal(err)
	}
	r := a.do("GET", "/v1/projects/"+f.project+"/clusters?kind=duplicate_group", f.key, nil)
	expect(t, r, 200, "")
	f.cluster = decode[pageOf[created]](t, r).Items[0].ID
	f.slug = a.newGallery(f.key, f.project, map[string]any{"title": "W", "assetIds": []uuid.UUID{f.assets[0]}})["shareSlug"].(string)
	f.viewer = a.viewerToken(f.slug, "")
	return f
}

// expectField checks r is 400 validation_failed naming field, and, when
// problem is given, with that problem in the fields and the message.
func expectField(t *testing.T, what string, r reply, field, problem string) {
	t.Helper()
	if r.status != 400 || r.json(t)["code"] != "validation_failed" {
		t.Errorf("%s: %d %s, want 400 validation_failed", what, r.status, r.body)
		return
	}
	got := fields(t, r)
	if _, ok := got[field]; !ok || len(got) != 1 {
		t.Errorf("%s: fields %v, want %s named", what, got, field)
		return
	}
	if problem != "" {
		if msg := r.json(t)["message"]; got[field] != problem || msg != field+" "+problem+"." {
			t.Errorf("%s: %s %q (message %q), want %q", what, field, got[field], msg, problem)
		}
	}
}

// Postgres stores neither text nor jsonb with the NUL character, which
// JSON can carry as \u0000, nor jsonb with half a surrogate pair: every
// route refuses them, naming the field.
func TestTextPostgresCannotStoreIsRefused(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	f := newInputFixture(t, a)
	asset, cull := "/v1/assets/"+f.assets[0].String(), "/v1/projects/"+f.project+"/cull:applyAction"
	search := "/v1/projects/" + f.project + "/search"
	for _, c := range []struct {
		method, path, key, body, field string
	}{
		{"POST", "/v1/projects", f.key, `{"title": "a\u0000b"}`, "title"},
		{"POST", "/v1/projects", f.key, `{"title": "t", "description": "a\u0000b"}`, "description"},
		{"PATCH", "/v1/projects/" + f.project, f.key, `{"description": "a\u0000b"}`, "description"},
		{"POST", "/v1/projects/" + f.project + "/assets:prepareUpload", f.key,
			`{"files": [{"filename": "a.jpg", "byteSize": 10}, {"filename": "b.jpg", "byteSize": 10, "clientFileId": "a\u0000b"}]}`, "files[1].clientFileId"},
		{"PATCH", asset, f.key, `{"keywords": ["ok", "a\u0000b"]}`, "keywords[1]"},
		{"PATCH", asset, f.key, `{"notes": "a\u0000b"}`, "notes"},
		{"PATCH", asset, f.key, `{"iptc": {"headline": "a\u0000b"}}`, "iptc.headline"},
		{"PATCH", asset, f.key, `{"iptc": {"a\u0000b": "x"}}`, "iptc"},
		{"PATCH", asset, f.key, `{"flags": {"mine": {"why": ["a\u0000b"]}}}`, "flags.mine.why[0]"},
		{"POST", asset + "/ratings", f.key, `{"notes": "a\u0000b"}`, "notes"},
		{"POST", cull, f.key, `{"actions": [{"assetId": "` + f.assets[0].String() + `", "notes": "a\u0000b"}]}`, "actions[0].notes"},
		{"POST", asset + "/edits", f.key, `{"name": "a\u0000b", "params": {}}`, "name"},
		{"POST", "/v1/projects/" + f.project + "/galleries", f.key, `{"title": "a\u0000b"}`, "title"},
		{"POST", "/v1/webhooks", f.key, `{"url": "http://example.org/", "events": ["asset.failed"], "secret": "0123456789abcdef\u0000"}`, "secret"},
		{"PATCH", "/v1/clusters/" + f.cluster, f.key, `{"title": "a\u0000b"}`, "title"},
		{"PATCH", "/v1/clusters/" + f.cluster, f.key, `{"manualOverrides": {"note": "a\u0000b"}}`, "manualOverrides.note"},
		{"POST", search, f.key, `{"q": "a\u0000b"}`, "q"},
		{"POST", search, f.key, `{"filters": {"camera": "a\u0000b"}}`, "filters.camera"},
		{"POST", "/v1/share/" + f.slug + "/comment", f.viewer, `{"assetId": "` + f.assets[0].String() + `", "text": "a\u0000b"}`, "text"},
		{"PATCH", asset, f.key, `{"iptc": {"headline": "a\ud800b"}}`, "iptc.headline"},
		{"PATCH", asset, f.key, `{"flags": {"mine": ["\udc00"]}}`, "flags.mine[0]"},
		{"PATCH", "/v1/clusters/" + f.cluster, f.key, `{"manualOverrides": {"n\u00f6te": "\ud83d\u0041"}}`, "manualOverrides.n\u00f6te"},
	} {
		expectField(t, c.method+" "+c.path+" "+c.body, a.do(c.method, c.path, c.key, c.body), c.field, "")
	}

	// A backslash before u0000 is text, not the NUL character; a whole
	// surrogate pair is one character.
	r := a.do("POST", "/v1/projects", f.key, `{"title": "a\\u0000b \\ud800 \ud83d\ude00"}`)
	expect(t, r, 201, "")
	if title := r.json(t)["title"]; title != `a\u0000b \ud800 😀` {
		t.Fatalf("title %q", title)
	}
	expect(t, a.do("PATCH", asset, f.key, `{"iptc": {"headline": "\ud83d\ude00"}}`), 200, "")
}

// A path, query value or header that is not UTF-8 text cannot reach
// Postgres as text: a path names nothing, the rest is refused.
func TestBytesThatAreNotTextAreRefused(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)

	expect(t, a.do("GET", "/v1/share/%ff", "", nil), 404, "not_found")
	expect(t, a.do("GET", "/v1/share/a%00b", "", nil), 404, "not_found")
	expect(t, a.do("POST", "/v1/projects/%ff/archive", key, nil, "Idempotency-Key", "k1"), 404, "not_found")
	for _, q := range []string{"%ff%fe", "a%00b"} {
		expectField(t, "q="+q, a.do("GET", "/v1/projects/"+project+"/search?q="+q, key, nil), "q", "")
	}
	expectField(t, "Idempotency-Key", a.do("POST", "/v1/projects", key, map[string]any{"title": "t"}, "Idempotency-Key", "k\xff1"), "Idempotency-Key", "")
}

// A URL may name a file in bytes that are not UTF-8: its name keeps what is
// text. A host that is not UTF-8 cannot be looked up.
func TestImportOfANameThatIsNotText(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	imports := "/v1/projects/" + project + "/assets:import"
	expect(t, a.do("POST", imports, key, map[string]any{"urls": []string{"http://127.0.0.1:1/a%ffb.jpg"}}), 202, "")
	if n := a.count(`SELECT count(*) FROM assets WHERE filename = 'a` + "\uFFFD" + `b.jpg'`); n != 1 {
		t.Fatalf("%d assets named a\uFFFDb.jpg", n)
	}
	expectField(t, "host", a.do("POST", imports, key, map[string]any{"urls": []string{"http://%ff/"}}), "urls[0]", "")
}

// Postgres reads UTC offsets up to ±15:59, Go up to ±23:59; no zone in
// use is beyond ±14:00.
func TestOffsetsPostgresCannotReadAreRefused(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)

	prepare := func(at string) reply {
		return a.do("POST", "/v1/projects/"+project+"/assets:prepareUpload", key,
			`{"files": [{"filename": "a.jpg", "byteSize": 10, "capturedAt": "`+at+`"}]}`)
	}
	expectField(t, "capturedAt", prepare("2020-01-01T00:00:00-23:59"), "files[0].capturedAt", "")
	expect(t, prepare("2020-01-01T00:00:00-15:59"), 200, "")

	galleries := "/v1/projects/" + project + "/galleries"
	far := "2099-01-01T00:00:00-23:00"
	expectField(t, "gallery", a.do("POST", galleries, key, `{"title": "W", "expiresAt": "`+far+`"}`), "expiresAt", "")
	g := a.newGallery(key, project, map[string]any{"title": "W"})
	expectField(t, "gallery PATCH", a.do("PATCH", "/v1/galleries/"+g["id"].(string), key, `{"expiresAt": "`+far+`"}`), "expiresAt", "")

	search := "/v1/projects/" + project + "/search"
	for _, name := range []string{"from", "to"} {
		expectField(t, name, a.do("POST", search, key, `{"filters": {"`+name+`": "2020-01-01T00:00:00+23:00"}}`), "filters."+name, "")
	}

	cursor := base64.RawURLEncoding.EncodeToString([]byte("2020-01-01T00:00:00-23:59|" + uuid.NewString()))
	for _, path := range []string{"/v1/projects", "/v1/projects/" + project + "/assets", "/v1/webhooks"} {
		expect(t, a.do("GET", path+"?cursor="+cursor, key, nil), 400, "invalid_cursor")
	}
}

// A value of the wrong type is named with its index and the kind it must
// be, wherever it is, UUIDs and times included.
func TestMisfitValuesAreNamed(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	f := newInputFixture(t, a)
	asset, id := "/v1/assets/"+f.assets[0].String(), f.assets[0].String()
	project := "/v1/projects/" + f.project
	uuidProblem, timeProblem := "must be a UUID", "must be a time in RFC 3339 form, such as 2024-05-01T14:30:00Z"
	for _, c := range []struct {
		method, path, key, body, field, problem string
	}{
		{"PATCH", asset, f.key, `{"keywords": "a"}`, "keywords", "must be an array"},
		{"PATCH", asset, f.key, `{"iptc": []}`, "iptc", "must be an object"},
		{"PATCH", asset, f.key, `{"notes": ["a"]}`, "notes", "must be a string"},
		{"POST", project + "/exports", f.key, `{"preset": "web", "assetIds": "` + id + `"}`, "assetIds", "must be an array"},
		{"POST", project + "/search", f.key, `{"filters": {"readiness": "cull"}}`, "filters.readiness", "must be an array"},
		{"POST", project + "/search", f.key, `{"filters": {"picked": "yes"}}`, "filters.picked", "must be true or false"},
		{"POST", "/v1/webhooks", f.key, `{"url": "http://example.org/", "events": "batch.completed"}`, "events", "must be an array"},
		{"POST", project + "/assets:prepareUpload", f.key, `{"files": [{"filename": "a.jpg", "byteSize": 1e9}]}`, "files[0].byteSize", "must be a whole number"},
		{"POST", project + "/assets:prepareUpload", f.key,
			`{"files": [{"filename": "a.jpg", "byteSize": 1}, {"filename": "b.jpg", "byteSize": 1.5}]}`, "files[1].byteSize", "must be a whole number"},
		{"POST", project + "/assets:prepareUpload", f.key, `{"files": [{"filename": "a.jpg", "byteSize": 1, "capturedAt": "yesterday"}]}`, "files[0].capturedAt", timeProblem},
		{"POST", project + "/assets:finalizeUpload", f.key, `{"assets": [{"assetId": "nope", "checksumSha256": "00"}]}`, "assets[0].assetId", uuidProblem},
		{"POST", project + "/cull:applyAction", f.key, `{"actions": [{"assetId": "` + id + `"}, {"assetId": 7}]}`, "actions[1].assetId", uuidProblem},
		{"POST", project + "/cull:applyAction", f.key, `{"actions": [{"assetId": "` + id + `", "rating": "five"}]}`, "actions[0].rating", "must be a whole number"},
		{"POST", "/v1/clusters/" + f.cluster + "/winner", f.key, `{"winnerAssetId": "nope"}`, "winnerAssetId", uuidProblem},
		{"POST", "/v1/auth/verify", "", `{"challengeId": "nope", "code": "123456"}`, "challengeId", uuidProblem},
		{"POST", asset + "/edits", f.key, `{"name": "v2", "parentId": "nope", "params": {}}`, "parentId", uuidProblem},
		{"POST", project + "/galleries", f.key, `{"title": "W", "expiresAt": "soon"}`, "expiresAt", timeProblem},
		{"POST", "/v1/projects", f.key, `[]`, "(body)", "must be an object"},
		// JSON kept as sent: its numbers must fit a 64-bit float (a 500
		// from Postgres before).
		{"PATCH", asset, f.key, `{"flags": {"x": 1e200000}}`, "flags", ""},
		{"PATCH", asset, f.key, `{"iptc": {"x": [1, -1e-200000]}}`, "iptc", ""},
		{"PATCH", "/v1/clusters/" + f.cluster, f.key, `{"manualOverrides": {"x": {"y": 1e200000}}}`, "manualOverrides", ""},
	} {
		expectField(t, c.method+" "+c.path+" "+c.body, a.do(c.method, c.path, c.key, c.body), c.field, c.problem)
	}
}
