package server_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// waitExport polls the export until cond holds, ten times a second: under
// the API's rate limit (20 a second), however long the wait.
func (a *app) waitExport(key, id string, what string, cond func(exportReply) bool) exportReply {
	a.t.Helper()
	var e exportReply
	testenv.EventuallyEvery(a.t, what, 3*time.Minute, 100*time.Millisecond, func() bool {
		e = a.export(key, id)
		return cond(e)
	})
	return e
}

func TestExportRequestValidation(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project, other := a.newProject(key), a.newProject(key)
	_, ups := a.uploadAll(key, other, corpus(t, "photos/wood.jpg"))

	for _, c := range []struct {
		body  string
		field string
	}{
		{`{"preset": "poster"}`, "preset"},
		{`{}`, "preset"},
		{`{"preset": "web", "settings": {"quality": 20}}`, "settings.quality"},
		{`{"preset": "web", "settings": {"quality": 101}}`, "settings.quality"},
		{`{"preset": "web", "settings": {"longEdge": 100}}`, "settings.longEdge"},
		{`{"preset": "web", "settings": {"longEdge": 9000}}`, "settings.longEdge"},
		{`{"preset": "web", "settings": {"longEdge": 1000.5}}`, "settings.longEdge"},
		{`{"preset": "web", "settings": {"longEdge": "big"}}`, "settings.longEdge"},
		{`{"preset": "web", "settings": {"longEdge": 1000, "width": 800}}`, "settings.longEdge"},
		{`{"preset": "web", "settings": {"colour": "sepia"}}`, "settings.colour"},
		{`{"preset": "web", "settings": {"perPage": 12}}`, "settings.perPage"},
		{`{"preset": "instagram_carousel", "settings": {"longEdge": 1000}}`, "settings.longEdge"},
		{`{"preset": "story_9x16", "settings": {"height": 10000}}`, "settings.height"},
		{`{"preset": "full_res", "settings": {"quality": 90}}`, "settings.quality"},
		{`{"preset": "contact_sheet", "settings": {"perPage": 0}}`, "settings.perPage"},
		{`{"preset": "contact_sheet", "settings": {"includeNotReady": "yes"}}`, "settings.includeNotReady"},
		{`{"preset": "web", "settings": [1, 2]}`, "settings"},
		{`{"preset": "web", "assetIds": ["not-a-uuid"]}`, "assetIds[0]"},
		{`{"preset": "web", "assetIds": ["` + ups[0].AssetID + `"]}`, "assetIds"},
	} {
		r := a.do("POST", "/v1/projects/"+project+"/exports", key, c.body)
		expect(t, r, 400, "validation_failed")
		if f := fields(t, r); f[c.field] == nil || len(f) != 1 {
			t.Errorf("%s: fields %v, want %s named", c.body, f, c.field)
		}
	}
	// The assets of another project are named.
	r := a.do("POST", "/v1/projects/"+project+"/exports", key, map[string]any{"preset": "web", "assetIds": []string{ups[0].AssetID}})
	if ids, _ := details(t, r)["assetIds"].([]any); len(ids) != 1 || ids[0] != ups[0].AssetID {
		t.Errorf("details %s", r.body)
	}
	if n := a.count(`SELECT count(*) FROM exports`); n != 0 {
		t.Fatalf("%d exports recorded from refused requests", n)
	}
}

func TestCreateExportQueuesACriticalTask(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))

	body := map[string]any{"preset": "web", "assetIds": []string{ups[1].AssetID, ups[0].AssetID}, "settings": map[string]any{"quality": 70}}
	r := a.do("POST", "/v1/projects/"+project+"/exports", key, body, "Idempotency-Key", "export-1")
	expect(t, r, 201, "")
	e := decode[exportReply](t, r)
	settings, _ := json.Marshal(e.Settings)
	if e.Status != "queued" || e.Preset != "web" || e.ProjectID != project || e.Progress != 0 || e.Skipped == nil || e.Error != nil ||
		string(settings) != `{"includeEdits":true,"includeNotReady":true,"longEdge":2048,"quality":70}` {
		t.Fatalf("export %s", r.body)
	}
	if e.ExpiresAt == nil || e.ExpiresAt.Sub(e.CreatedAt) < 7*24*time.Hour-time.Second {
		t.Fatalf("expires %v, created %v", e.ExpiresAt, e.CreatedAt)
	}

	info, err := inspector(t, a.env).GetTaskInfo("critical", "export:"+e.ID)
	if err != nil {
		t.Fatalf("export task: %v", err)
	}
	var p tasks.ExportPayload
	json.Unmarshal(info.Payload, &p)
	if info.Type != "project:export" || info.Queue != "critical" || info.MaxRetry != 3 || p.ExportID.String() != e.ID || p.JobID.String() != e.JobID {
		t.Fatalf("task %+v payload %s", info, info.Payload)
	}
	b := a.batch(key, e.BatchID)
	if len(b.Jobs) != 1 || b.Jobs[0].ID != e.JobID || b.Jobs[0].Status != "queued" || b.Batch.Total != 1 {
		t.Fatalf("batch %+v", b)
	}
	var kind string
	a.env.DB.Get(&kind, `SELECT kind FROM batches WHERE id = $1`, e.BatchID)
	if kind != "export" {
		t.Fatalf("batch kind %q", kind)
	}

	// The same key and body answer the same export; nothing new is recorded.
	again := a.do("POST", "/v1/projects/"+project+"/exports", key, body, "Idempotency-Key", "export-1")
	expect(t, again, 201, "")
	if string(again.body) != string(r.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay differs:\n%s\n%s", r.body, again.body)
	}
	if n := a.count(`SELECT count(*) FROM exports`); n != 1 {
		t.Fatalf("%d exports after a replay", n)
	}
	if got := a.export(key, e.ID); got.ID != e.ID || got.Status != "queued" {
		t.Fatalf("GET %+v", got)
	}
	expect(t, a.do("GET", "/v1/exports/"+e.ID+"/download", key, nil), 409, "export_not_ready")
}

func TestAnotherUsersExportIsNotFound(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ana, bob := a.user("ana@example.org", false), a.user("bob@example.org", false)
	project := a.newProject(ana)
	e := a.newExport(ana, project, map[string]any{"preset": "full_res"})

	expect(t, a.do("POST", "/v1/projects/"+project+"/exports", bob, map[string]any{"preset": "full_res"}), 404, "not_found")
	expect(t, a.do("GET", "/v1/exports/"+e.ID, bob, nil), 404, "not_found")
	expect(t, a.do("GET", "/v1/exports/"+e.ID+"/download", bob, nil), 404, "not_found")
	expect(t, a.do("POST", "/v1/exports/"+e.ID+"/cancel", bob, nil), 404, "not_found")
	expect(t, a.do("GET", "/v1/exports/not-an-id", ana, nil), 404, "not_found")
	if got := a.export(ana, e.ID); got.Status != "queued" {
		t.Fatalf("bob's cancel reached ana's export: %s", got.Status)
	}
}

func TestCancelQueuedExportRemovesItsTask(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	e := a.newExport(key, project, map[string]any{"preset": "contact_sheet"})
	if e.Preset != "contact_sheet_pdf" {
		t.Errorf("preset contact_sheet answered as %q, want its name contact_sheet_pdf", e.Preset)
	}
	in := inspector(t, a.env)
	if _, err := in.GetTaskInfo("critical", "export:"+e.ID); err != nil {
		t.Fatal(err)
	}

	r := a.do("POST", "/v1/exports/"+e.ID+"/cancel", key, nil)
	expect(t, r, 200, "")
	if s := r.json(t)["status"]; s != "canceled" {
		t.Fatalf("status %v", s)
	}
	if _, err := in.GetTaskInfo("critical", "export:"+e.ID); err == nil {
		t.Fatal("the canceled export's task is still queued")
	}
	if b := a.batch(key, e.BatchID); b.Batch.Status != "cancelled" || b.Jobs[0].Status != "canceled" {
		t.Fatalf("batch %+v", b)
	}
	// Canceling twice is fine; downloading is not.
	expect(t, a.do("POST", "/v1/exports/"+e.ID+"/cancel", key, nil), 200, "")
	expect(t, a.do("GET", "/v1/exports/"+e.ID+"/download", key, nil), 409, "export_not_ready")
}

func TestCancelingTheBatchCancelsTheExport(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	e := a.newExport(key, project, map[string]any{"preset": "web"})
	expect(t, a.do("POST", "/v1/batches/"+e.BatchID+"/cancel", key, nil), 200, "")
	if got := a.export(key, e.ID); got.Status != "canceled" {
		t.Fatalf("export %s after its batch was canceled", got.Status)
	}
	expect(t, a.do("GET", "/v1/exports/"+e.ID+"/download", key, nil), 409, "export_not_ready")
	expect(t, a.do("POST", "/v1/exports/"+e.ID+"/cancel", key, nil), 200, "")
}

// kites are n copies of one photo, distinct by bytes after the JPEG end
// marker, which decoders ignore.
func kites(t *testing.T, n int) []photo {
	kite := corpus(t, "photos/kite-2560x1600.jpg")[0]
	out := make([]photo, n)
	for i := range out {
		out[i] = photo{name: fmt.Sprintf("kite-%02d.jpg", i), data: append(bytes.Clone(kite.data), fmt.Sprint(i)...)}
	}
	return out
}

func TestExportEndToEnd(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ana, bob := a.user("ana@example.org", false), a.user("bob@example.org", false)
	project := a.newProject(ana)
	photos := corpus(t, "photos/wood.jpg", "photos/kite-2560x1600.jpg", "odd/orientation-6.jpg")
	r, _ := a.uploadAll(ana, project, photos)
	expect(t, r, 200, "")
	a.startWorker()

	e := a.newExport(ana, project, map[string]any{"preset": "instagram_carousel"})
	e = a.waitExport(ana, e.ID, "the export to finish", func(e exportReply) bool { return e.Status == "done" || e.Status == "failed" })
	if e.Status != "done" || e.Progress != 1 || e.ByteSize == nil || len(e.Skipped) != 0 {
		t.Fatalf("export %+v", e)
	}
	if e.ExpiresAt == nil || e.ExpiresAt.Before(time.Now().Add(7*24*time.Hour-time.Minute)) {
		t.Fatalf("a finished export expires at %v, want 7 days after it was built", e.ExpiresAt)
	}

	expect(t, a.do("GET", "/v1/exports/"+e.ID+"/download", bob, nil), 404, "not_found")
	r = a.do("GET", "/v1/exports/"+e.ID+"/download", ana, nil)
	expect(t, r, 200, "")
	var dl struct {
		URL       string
		ExpiresAt time.Time
	}
	json.Unmarshal(r.body, &dl)
	if !strings.HasPrefix(dl.URL, a.url+"/blobs/exports/"+e.ID+"/") || dl.ExpiresAt.After(time.Now().Add(16*time.Minute)) {
		t.Fatalf("download %s", r.body)
	}
	// The URL is the credential: no API key.
	res, err := http.Get(dl.URL)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/zip" || int64(len(data)) != *e.ByteSize {
		t.Fatalf("GET url: %d %s, %d bytes", res.StatusCode, res.Header.Get("Content-Type"), len(data))
	}
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil || len(z.File) != 3 {
		t.Fatalf("zip: %v, %d entries", err, len(z.File))
	}
	for _, f := range z.File {
		rc, _ := f.Open()
		img, _, err := image.Decode(rc)
		rc.Close()
		// 4:5 at 1080 wide, or as large as a smaller photo covers (the
		// upright 50×70 one): a preset's size is a bound, never a target.
		want := image.Pt(1080, 1350)
		if f.Name == "orientation-6.jpg" {
			want = image.Pt(50, 63)
		}
		if err != nil || img.Bounds().Size() != want {
			t.Fatalf("%s: %v %v, want %v", f.Name, err, img.Bounds(), want)
		}
	}
	expect(t, a.do("POST", "/v1/exports/"+e.ID+"/cancel", ana, nil), 409, "export_finished")

	// A signed URL past its expiry is refused, even for the right file.
	key := strings.SplitN(strings.TrimPrefix(dl.URL, a.url+"/blobs/"), "?", 2)[0]
	old := blob.NewSigner([]byte(testUploadSecret), a.url+"/blobs").URL(blob.Grant{Method: http.MethodGet, Key: key,
		ContentType: "application/zip", Expires: time.Now().Add(-time.Second)})
	res, err = http.Get(old)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 403 || !strings.Contains(string(body), `"url_expired"`) {
		t.Fatalf("expired URL: %d %s", res.StatusCode, body)
	}

	// Once the export itself expires, there is nothing to download.
	a.env.Age(t, "exports", "expires_at", time.Second, "id = $1", e.ID)
	expect(t, a.do("GET", "/v1/exports/"+e.ID+"/download", ana, nil), 410, "export_expired")
}

func TestCancelRunningExportLeavesNoFile(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	r, _ := a.uploadAll(key, project, kites(t, 30))
	expect(t, r, 200, "")
	a.startWorker()

	e := a.newExport(key, project, map[string]any{"preset": "story_9x16"})
	a.waitExport(key, e.ID, "the export to make progress", func(e exportReply) bool { return e.Progress > 0 || e.Status == "done" })
	r = a.do("POST", "/v1/exports/"+e.ID+"/cancel", key, nil)
	expect(t, r, 200, "")

	// The handler sees its context end and discards what it wrote. Asynq
	// lets go of the task at once; the handler stops at its next check.
	files := func() []string {
		var out []string
		filepath.WalkDir(filepath.Join(a.cfg.DataDir, "blobs", "exports"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	testenv.Eventually(t, "the canceled export's files to be removed", 5*time.Minute, func() bool { return len(files()) == 0 })
	if info, err := inspector(t, a.env).GetTaskInfo("critical", "export:"+e.ID); err == nil && info.State == asynq.TaskStateActive {
		t.Fatal("the canceled export is still running")
	}
	if got := a.export(key, e.ID); got.Status != "canceled" || got.ByteSize != nil {
		t.Fatalf("export %+v", got)
	}
	if b := a.batch(key, e.BatchID); b.Jobs[0].Status != "canceled" {
		t.Fatalf("job %+v", b.Jobs[0])
	}
}
