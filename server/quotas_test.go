package server_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"lightbox/store"
)

type quotaReply struct {
	Limit *int64
	Used  int64
}

type sessionQuotas struct {
	Bytes struct {
		quotaReply
		Stored, Exports, InFlight int64
	}
	FilesInFlight, Exports quotaReply
}

func (a *app) quotas(key string) sessionQuotas {
	a.t.Helper()
	r := a.do("GET", "/v1/session", key, nil)
	expect(a.t, r, 200, "")
	var out struct{ Quotas *sessionQuotas }
	if err := json.Unmarshal(r.body, &out); err != nil || out.Quotas == nil {
		a.t.Fatalf("session without quotas: %v %s", err, r.body)
	}
	return *out.Quotas
}

func (a *app) setQuotas(email string, q store.Quotas) {
	a.t.Helper()
	u, err := a.env.Store.UserByEmail(context.Background(), email)
	if err != nil {
		a.t.Fatal(err)
	}
	if err := a.env.Store.SetQuotas(context.Background(), u.ID, q); err != nil {
		a.t.Fatal(err)
	}
}

func prepareBody(sizes ...int) map[string]any {
	files := make([]map[string]any, len(sizes))
	for i, n := range sizes {
		files[i] = map[string]any{"filename": "a.jpg", "byteSize": n}
	}
	return map[string]any{"files": files}
}

// A user who would pass their bytes quota is refused and nothing of the
// request is prepared; their own limit wins over the default.
func TestPrepareOverTheBytesQuotaPreparesNothing(t *testing.T) {
	t.Parallel()
	a := appWithEnv(t, "QUOTA_BYTES", "1000")
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	path := "/v1/projects/" + project + "/assets:prepareUpload"
	assets := func() int { return a.count(`SELECT count(*) FROM assets WHERE project_id = $1`, project) }

	expect(t, a.do("POST", path, key, prepareBody(600)), 200, "")
	r := a.do("POST", path, key, prepareBody(300, 200))
	expect(t, r, 403, "quota_exceeded")
	d := details(t, r)
	if d["quota"] != "bytes" || d["limit"] != 1000.0 || d["used"] != 600.0 || d["requested"] != 500.0 {
		t.Fatalf("details %v", d)
	}
	if n := assets(); n != 1 {
		t.Fatalf("%d assets after a refused prepare, want 1", n)
	}
	// What still fits goes through.
	expect(t, a.do("POST", path, key, prepareBody(400)), 200, "")

	big := int64(1 << 20)
	a.setQuotas("ana@example.org", store.Quotas{Bytes: &big})
	expect(t, a.do("POST", path, key, prepareBody(300, 200)), 200, "")
	if q := a.quotas(key); *q.Bytes.Limit != big || q.Bytes.InFlight != 1500 || q.FilesInFlight.Used != 4 {
		t.Fatalf("quotas %+v", q)
	}
	zero := int64(0)
	a.setQuotas("ana@example.org", store.Quotas{Bytes: &zero})
	if q := a.quotas(key); q.Bytes.Limit != nil {
		t.Fatalf("0 is no limit, got %d", *q.Bytes.Limit)
	}
}

// GET /v1/session shows what an upload uses as it goes: in flight once
// prepared, stored once finalized.
func TestSessionShowsUseMovingWithAnUpload(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	before := a.quotas(key)
	if before.Bytes.Used != 0 || before.FilesInFlight.Used != 0 || before.Exports.Used != 0 ||
		*before.Bytes.Limit != 1<<40 || *before.FilesInFlight.Limit != 10_000 || *before.Exports.Limit != 20 {
		t.Fatalf("a new user's quotas %+v", before)
	}

	ps := corpus(t, "photos/wood.jpg")
	size := int64(len(ps[0].data))
	ups := a.prepare(key, project, ps)
	if q := a.quotas(key); q.Bytes.InFlight != size || q.Bytes.Stored != 0 || q.Bytes.Used != size || q.FilesInFlight.Used != 1 {
		t.Fatalf("prepared: %+v, want %d in flight", q, size)
	}
	expect(t, a.put(ups[0].UploadURL, ups[0].Headers, ps[0].data), 201, "")
	expect(t, a.finalize(key, project, ups, []string{ps[0].sum()}), 200, "")
	if q := a.quotas(key); q.Bytes.Stored != size || q.Bytes.InFlight != 0 || q.FilesInFlight.Used != 0 {
		t.Fatalf("finalized: %+v, want %d stored", q, size)
	}
	a.newExport(key, project, map[string]any{"preset": "contact_sheet"})
	if q := a.quotas(key); q.Exports.Used != 1 {
		t.Fatalf("exported: %+v", q)
	}
}

// Uploads in flight free themselves, so passing that quota asks the client
// to come back when the first one expires.
func TestFilesInFlightQuotaAsksToWait(t *testing.T) {
	t.Parallel()
	a := appWithEnv(t, "QUOTA_FILES_IN_FLIGHT", "2")
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	path := "/v1/projects/" + project + "/assets:prepareUpload"

	expect(t, a.do("POST", path, key, prepareBody(10, 10)), 200, "")
	r := a.do("POST", path, key, prepareBody(10))
	expect(t, r, 429, "quota_exceeded")
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || retry < 1 || retry > int(a.cfg.UploadURLTTL.Seconds())+1 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if d := details(t, r); d["quota"] != "filesInFlight" || d["limit"] != 2.0 || d["used"] != 2.0 || d["retryAfter"] != float64(retry) {
		t.Fatalf("details %v", d)
	}
	r = a.do("POST", path, key, prepareBody(10, 10, 10))
	expect(t, r, 429, "quota_exceeded")
	if d := details(t, r); d["maxAtOnce"] != 2.0 || r.header.Get("Retry-After") != "" {
		t.Fatalf("more than ever fits: details %v, Retry-After %q", d, r.header.Get("Retry-After"))
	}
	if msg := r.json(t)["message"].(string); strings.Contains(msg, "wait") || !strings.Contains(msg, "at most 2") {
		t.Fatalf("more than ever fits, yet the message says %q", msg)
	}
}

// Exports past the quota are refused until one is canceled.
func TestExportsQuota(t *testing.T) {
	t.Parallel()
	a := appWithEnv(t, "QUOTA_EXPORTS", "1")
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	body := map[string]any{"preset": "contact_sheet"}

	first := a.newExport(key, project, body)
	r := a.do("POST", "/v1/projects/"+project+"/exports", key, body)
	expect(t, r, 403, "quota_exceeded")
	if d := details(t, r); d["quota"] != "exports" || d["limit"] != 1.0 || d["used"] != 1.0 {
		t.Fatalf("details %v", d)
	}
	if n := a.count(`SELECT count(*) FROM exports WHERE project_id = $1`, project); n != 1 {
		t.Fatalf("%d exports recorded, want 1", n)
	}
	expect(t, a.do("POST", "/v1/exports/"+first.ID+"/cancel", key, nil), 200, "")
	a.newExport(key, project, body)
}

// A URL import is refused at once when the account is already full: the
// sizes are known only once fetched, where each download is checked.
func TestImportIntoAFullAccountIsRefused(t *testing.T) {
	t.Parallel()
	a := appWithEnv(t, "QUOTA_BYTES", "1000")
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	imp := map[string]any{"urls": []string{"https://photos.example.org/a.jpg"}}

	expect(t, a.do("POST", "/v1/projects/"+project+"/assets:import", key, imp), 202, "")
	expect(t, a.do("POST", "/v1/projects/"+project+"/assets:prepareUpload", key, prepareBody(1000)), 200, "")
	r := a.do("POST", "/v1/projects/"+project+"/assets:import", key, imp)
	expect(t, r, 403, "quota_exceeded")
	if d := details(t, r); d["quota"] != "bytes" || d["limit"] != 1000.0 || d["used"] != 1000.0 {
		t.Fatalf("details %v", d)
	}
	if n := a.count(`SELECT count(*) FROM jobs WHERE type = 'asset:download'`); n != 1 {
		t.Fatalf("%d download jobs, want the first import's only", n)
	}
}
