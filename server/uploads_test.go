package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

func TestUploadFlowEnqueuesTypedTasks(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	ps := corpus(t, "photos/wood.jpg", "photos/storm.jpg", "odd/rgba8.png")

	r, ups := a.uploadAll(key, project, ps)
	expect(t, r, 200, "")
	ans := decode[finalized](t, r)
	if len(ans.QueuedJobs) != 3 || ans.BatchID == "" {
		t.Fatalf("finalize answer %s", r.body)
	}
	for i, as := range ans.Assets {
		if as.Status != "uploaded" || as.AssetID != ups[i].AssetID {
			t.Fatalf("asset %d: %+v", i, as)
		}
	}

	in := inspector(t, a.env)
	for i, u := range ups {
		info, err := in.GetTaskInfo("default", "ingest:"+u.AssetID)
		if err != nil {
			t.Fatalf("ingest task of asset %d: %v", i, err)
		}
		if info.Type != tasks.TypeIngest || info.MaxRetry != 3 || info.Queue != "default" || info.Timeout <= 0 {
			t.Fatalf("task %+v", info)
		}
		var p tasks.IngestPayload
		json.Unmarshal(info.Payload, &p)
		if p.AssetID.String() != u.AssetID || p.ProjectID.String() != project || p.JobID.String() == "" {
			t.Fatalf("payload %s", info.Payload)
		}
		// The stored original is exactly what was sent.
		f, _, err := a.blobs.Open(context.Background(), "originals/"+project+"/"+u.AssetID)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(f)
		f.Close()
		if !bytes.Equal(got, ps[i].data) {
			t.Fatalf("stored original %d differs from the upload", i)
		}
	}
	if _, err := in.GetTaskInfo("low", "chain:flush"); err != nil {
		t.Fatalf("chain:flush not enqueued: %v", err)
	}
	counts, err := a.env.Store.AttestationQueueCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if queued := counts[store.AttestPending]; queued != 3 {
		t.Fatalf("%d originals waiting for attestation, want 3", queued)
	}
	r = a.do("GET", "/v1/projects/"+project, key, nil)
	if stats := r.json(t)["stats"].(map[string]any); stats["total"] != 3.0 || stats["processing"] != 3.0 {
		t.Fatalf("stats %v", stats)
	}
}

func TestFinalizeTwiceAnswersTheSameAndEnqueuesOnce(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	ps := corpus(t, "photos/wood.jpg", "photos/dune.jpg")
	first, ups := a.uploadAll(key, project, ps)
	expect(t, first, 200, "")
	second := a.finalize(key, project, ups, []string{ps[0].sum(), ps[1].sum()})
	expect(t, second, 200, "")
	if string(first.body) != string(second.body) {
		t.Fatalf("second finalize differs:\n%s\n%s", first.body, second.body)
	}
	sizes, err := inspector(t, a.env).GetQueueInfo("default")
	if err != nil || sizes.Size != 2 {
		t.Fatalf("default queue holds %v tasks (%v), want 2", sizes, err)
	}
	var jobs, batches int
	a.env.DB.Get(&jobs, "SELECT count(*) FROM jobs")
	a.env.DB.Get(&batches, "SELECT count(*) FROM batches")
	if jobs != 2 || batches != 1 {
		t.Fatalf("%d jobs and %d batches after two finalizes, want 2 and 1", jobs, batches)
	}
}

func TestDuplicatesPointAtTheOriginal(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	wood := corpus(t, "photos/wood.jpg")[0]

	r, first := a.uploadAll(key, project, []photo{wood})
	expect(t, r, 200, "")
	original := first[0].AssetID

	// The same bytes again, twice in one call, under other names.
	again := []photo{{"copy.jpg", wood.data}, {"copy2.jpg", wood.data}}
	r, ups := a.uploadAll(key, project, again)
	expect(t, r, 200, "")
	ans := decode[finalized](t, r)
	for i, as := range ans.Assets {
		if as.Status != "duplicate" || as.DuplicateOf != original {
			t.Fatalf("copy %d: %+v, want duplicate of %s", i, as, original)
		}
		if _, err := a.blobs.Stat(context.Background(), "originals/"+project+"/"+ups[i].AssetID); err == nil {
			t.Fatalf("the extra blob of copy %d was kept", i)
		}
	}
	if len(ans.QueuedJobs) != 0 {
		t.Fatalf("duplicates queued jobs %v", ans.QueuedJobs)
	}

	// Two new identical files in one call: the first is the original.
	storm := corpus(t, "photos/storm.jpg")[0]
	r, ups = a.uploadAll(key, project, []photo{storm, {"storm-copy.jpg", storm.data}})
	ans = decode[finalized](t, r)
	if ans.Assets[0].Status != "uploaded" || ans.Assets[1].Status != "duplicate" || ans.Assets[1].DuplicateOf != ups[0].AssetID {
		t.Fatalf("same bytes in one call: %s", r.body)
	}
}

func TestChecksumMismatchFailsTheAssetAlone(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	ps := corpus(t, "photos/wood.jpg", "photos/dune.jpg")
	ups := a.prepare(key, project, ps)
	for i, u := range ups {
		expect(t, a.put(u.UploadURL, u.Headers, ps[i].data), 201, "")
	}
	r := a.finalize(key, project, ups, []string{ps[0].sum(), ps[0].sum()})
	expect(t, r, 200, "")
	ans := decode[finalized](t, r)
	if ans.Assets[0].Status != "uploaded" || ans.Assets[1].Status != "failed" || ans.Assets[1].Error == nil || ans.Assets[1].Error.Code != "checksum_mismatch" {
		t.Fatalf("answer %s", r.body)
	}
	if len(ans.QueuedJobs) != 1 {
		t.Fatalf("queued %v, want only the good asset", ans.QueuedJobs)
	}
	if _, err := inspector(t, a.env).GetTaskInfo("default", "ingest:"+ups[1].AssetID); err == nil {
		t.Fatal("a task was enqueued for the mismatched asset")
	}
}

func TestFinalizeWithoutUploadLeavesAssetPending(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	ps := corpus(t, "photos/wood.jpg")
	ups := a.prepare(key, project, ps)
	r := a.finalize(key, project, ups, []string{ps[0].sum()})
	expect(t, r, 200, "")
	if !strings.Contains(string(r.body), `"upload_missing"`) {
		t.Fatalf("answer %s", r.body)
	}
	// The client can still upload and finalize.
	expect(t, a.put(ups[0].UploadURL, ups[0].Headers, ps[0].data), 201, "")
	r = a.finalize(key, project, ups, []string{ps[0].sum()})
	if !strings.Contains(string(r.body), `"status":"uploaded"`) {
		t.Fatalf("after the upload: %s", r.body)
	}
}

func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	p := corpus(t, "photos/wood.jpg")[0]
	u := a.prepare(key, project, []photo{p})[0]
	jpeg := map[string]string{"Content-Type": "image/jpeg"}

	parsed, _ := url.Parse(u.UploadURL)
	q := parsed.Query()
	q.Set("max", "999999999")
	tampered := *parsed
	tampered.RawQuery = q.Encode()
	expect(t, a.put(tampered.String(), jpeg, p.data), 403, "invalid_signature")

	signer := blob.NewSigner([]byte(testUploadSecret), a.url+"/blobs")
	objectKey := strings.TrimPrefix(parsed.Path, "/blobs/")
	expired := signer.URL(blob.Grant{Method: "PUT", Key: objectKey, Expires: time.Now().Add(-time.Second), MaxSize: int64(len(p.data)), ContentType: "image/jpeg"})
	expect(t, a.put(expired, jpeg, p.data), 403, "url_expired")

	expect(t, a.put(u.UploadURL, jpeg, append(bytes.Clone(p.data), 0)), 413, "too_large")
	expect(t, a.put(u.UploadURL, map[string]string{"Content-Type": "image/png"}, p.data), 415, "content_type_mismatch")
	escape := signer.URL(blob.Grant{Method: "PUT", Key: "originals/../../etc/x", Expires: time.Now().Add(time.Minute), MaxSize: 10, ContentType: "image/jpeg"})
	expect(t, a.put(escape, jpeg, []byte("x")), 400, "invalid_key")

	// Nothing above stored a byte; the real upload still works, once.
	if asset, err := a.env.Store.AssetByID(context.Background(), uuid.MustParse(u.AssetID)); err != nil || asset.UploadedAt != nil {
		t.Fatal("a refused upload was recorded")
	}
	expect(t, a.put(u.UploadURL, jpeg, p.data), 201, "")
	expect(t, a.finalize(key, project, []upload{u}, []string{p.sum()}), 200, "")
	expect(t, a.put(u.UploadURL, jpeg, p.data), 409, "already_finalized")
}

func TestPrepareValidation(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	path := "/v1/projects/" + project + "/assets:prepareUpload"

	r := a.do("POST", path, key, map[string]any{"files": []map[string]any{
		{"filename": "a.jpg", "byteSize": 10},
		{"filename": "b.psd", "byteSize": 10, "contentType": "image/vnd.adobe.photoshop"},
	}})
	expect(t, r, 415, "unsupported_media_type")
	if !strings.Contains(string(r.body), "files[1].contentType") {
		t.Fatalf("unsupported file not named: %s", r.body)
	}
	r = a.do("POST", path, key, map[string]any{"files": []map[string]any{
		{"filename": "", "byteSize": 0},
		{"filename": "../x.jpg", "byteSize": a.cfg.MaxUploadBytes + 1},
	}})
	expect(t, r, 400, "validation_failed")
	for _, f := range []string{"files[0].filename", "files[0].byteSize", "files[1].filename", "files[1].byteSize"} {
		if !strings.Contains(string(r.body), f) {
			t.Errorf("%s not named: %s", f, r.body)
		}
	}
	many := make([]map[string]any, 1001)
	for i := range many {
		many[i] = map[string]any{"filename": "x.jpg", "byteSize": 1}
	}
	expect(t, a.do("POST", path, key, map[string]any{"files": many}), 400, "validation_failed")
	expect(t, a.do("POST", path, key, map[string]any{"files": []any{}}), 400, "validation_failed")

	bob := a.user("bob@example.org", false)
	expect(t, a.do("POST", path, bob, map[string]any{"files": []map[string]any{{"filename": "a.jpg", "byteSize": 1}}}), 404, "not_found")
	expect(t, a.do("POST", "/v1/projects/"+project+"/assets:finalizeUpload", bob,
		map[string]any{"assets": []map[string]any{{"assetId": project, "checksumSha256": strings.Repeat("a", 64)}}}), 404, "not_found")
	expect(t, a.do("POST", "/v1/projects/"+project+"/assets:finalizeUpload", key,
		map[string]any{"assets": []map[string]any{{"assetId": project, "checksumSha256": "ABC"}}}), 400, "validation_failed")

	expect(t, a.do("POST", "/v1/projects/"+project+"/archive", key, nil), 200, "")
	expect(t, a.do("POST", path, key, map[string]any{"files": []map[string]any{{"filename": "a.jpg", "byteSize": 1}}}), 409, "project_not_active")
}

func TestFinalizeRecordsWorkWhenTheQueueIsDown(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	// The queue client talks to a Redis that does not answer.
	a := startAppWith(t, env, env.Redis, options{queueURL: "redis://127.0.0.1:1/0"})
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	r, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg"))
	expect(t, r, 200, "")
	var waiting int
	env.DB.Get(&waiting, "SELECT count(*) FROM jobs WHERE enqueued_at IS NULL AND asset_id = $1", ups[0].AssetID)
	if waiting != 1 {
		t.Fatalf("%d jobs wait for the sweeper, want 1", waiting)
	}
}

func TestAssetsListAcrossPages(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg", "photos/storm.jpg"))

	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		r := a.do("GET", "/v1/projects/"+project+"/assets?limit=2&cursor="+cursor, key, nil)
		expect(t, r, 200, "")
		var page struct {
			Items []struct {
				ID    string
				Flags struct{ Readiness string }
			}
			PageInfo struct{ NextCursor *string }
		}
		json.Unmarshal(r.body, &page)
		for _, it := range page.Items {
			ids = append(ids, it.ID)
			if it.Flags.Readiness != "uploaded" {
				t.Fatalf("asset %s readiness %q", it.ID, it.Flags.Readiness)
			}
		}
		if page.PageInfo.NextCursor == nil {
			if pages != 1 {
				t.Fatalf("%d pages of 2 for 3 assets", pages+1)
			}
			break
		}
		cursor = *page.PageInfo.NextCursor
	}
	want := []string{ups[0].AssetID, ups[1].AssetID, ups[2].AssetID}
	slices.Sort(want)
	slices.Sort(ids)
	if !slices.Equal(ids, want) {
		t.Fatalf("listed %v, want each of %v once", ids, want)
	}
	bob := a.user("bob@example.org", false)
	expect(t, a.do("GET", "/v1/projects/"+project+"/assets", bob, nil), 404, "not_found")
	expect(t, a.do("GET", "/v1/assets/"+ups[0].AssetID, bob, nil), 404, "not_found")
	expect(t, a.do("GET", "/v1/assets/"+ups[0].AssetID, key, nil), 200, "")
}

// A PUT that meets a full disk is refused as such and keeps nothing; the
// same URL works once space is freed.
func TestPutOnAFullDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v): this needs root or CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{dataDir: dir})
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	p := corpus(t, "photos/wood.jpg")[0]
	u := a.prepare(key, project, []photo{p})[0]

	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for chunk := make([]byte, 64<<10); err == nil; {
		_, err = f.Write(chunk)
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the disk: %v", err)
	}

	expect(t, a.put(u.UploadURL, u.Headers, p.data), 507, "storage_full")
	if asset, err := a.env.Store.AssetByID(context.Background(), uuid.MustParse(u.AssetID)); err != nil || asset.UploadedAt != nil {
		t.Fatalf("the refused upload was recorded (%v)", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "blobs", "originals", "*", ".upload-*"))
	if len(left) > 0 {
		t.Fatalf("partial files left: %v", left)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	expect(t, a.put(u.UploadURL, u.Headers, p.data), 201, "")
	expect(t, a.finalize(key, project, []upload{u}, []string{p.sum()}), 200, "")
}

// A body shorter than the size prepared is refused, whether its length was
// declared or not, and keeps nothing: as a bucket refuses a presigned PUT
// of another length. The same URL then takes the whole file.
func TestShortPutIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{dataDir: dir})
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	p := corpus(t, "photos/dune.jpg")[0]
	u := a.prepare(key, project, []photo{p})[0]
	short := p.data[:5000]

	expect(t, a.put(u.UploadURL, u.Headers, short), 400, "size_mismatch")
	req, _ := http.NewRequest("PUT", u.UploadURL, io.MultiReader(bytes.NewReader(short))) // no length: chunked
	for k, v := range u.Headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	expect(t, reply{status: res.StatusCode, header: res.Header, body: body}, 400, "size_mismatch")

	if asset, err := a.env.Store.AssetByID(context.Background(), uuid.MustParse(u.AssetID)); err != nil || asset.UploadedAt != nil {
		t.Fatalf("a short upload was recorded (%v)", err)
	}
	objectKey := blob.OriginalKey(uuid.MustParse(project), uuid.MustParse(u.AssetID))
	if _, err := a.blobs.Stat(context.Background(), objectKey); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a short upload left bytes at its key (%v)", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "blobs", "originals", "*", ".upload-*")); len(left) > 0 {
		t.Fatalf("partial files left: %v", left)
	}
	expect(t, a.finalize(key, project, []upload{u}, []string{photo{data: short}.sum()}), 200, "")
	if s := a.env.AssetStatus(t, uuid.MustParse(u.AssetID)); s != store.AssetPendingUpload {
		t.Fatalf("after finalizing the short bytes' checksum the asset is %s, want still pending", s)
	}

	expect(t, a.put(u.UploadURL, u.Headers, p.data), 201, "")
	expect(t, a.finalize(key, project, []upload{u}, []string{p.sum()}), 200, "")
}

// TestSessionNamesWhereUploadURLsLead: the session lists the origin of
// every upload URL prepare hands out, with the disk backend (the server's
// own /blobs) and with S3 (the bucket's endpoint), so a client can refuse
// a URL that leads anywhere else.
func TestSessionNamesWhereUploadURLsLead(t *testing.T) {
	t.Parallel()
	s3, _ := s3AppOn(t, testenv.S3(t), nil)
	for name, a := range map[string]*app{"disk": newApp(t), "s3": s3} {
		key := a.user("ana@example.org", false)
		ups := a.prepare(key, a.newProject(key), corpus(t, "photos/wood.jpg"))
		u, err := url.Parse(ups[0].UploadURL)
		if err != nil {
			t.Fatal(err)
		}
		r := a.do("GET", "/v1/session", key, nil)
		expect(t, r, 200, "")
		var s struct {
			UploadOrigins []string `json:"uploadOrigins"`
		}
		json.Unmarshal(r.body, &s)
		if want := []string{u.Scheme + "://" + u.Host}; !slices.Equal(s.UploadOrigins, want) {
			t.Errorf("%s: the session names upload origins %v; prepare's URL leads to %v", name, s.UploadOrigins, want)
		}
	}
}
