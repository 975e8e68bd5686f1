package server_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/internal/testenv"
)

// s3App is an app whose blobs live in the test's own bucket, reached
// through a proxy the test can cut off.
func s3App(t *testing.T, vars map[string]string) (*app, *blob.S3, *testenv.Proxy) {
	t.Helper()
	cfg := testenv.S3(t)
	proxy := testenv.NewProxy(t, strings.TrimPrefix(cfg.Endpoint, "http://"))
	cfg.Endpoint = "http://" + proxy.Addr
	a, s3 := s3AppOn(t, cfg, vars)
	return a, s3, proxy
}

// s3AppOn is an app whose blobs live in bucket.
func s3AppOn(t testing.TB, bucket blob.S3Config, vars map[string]string) (*app, *blob.S3) {
	t.Helper()
	s3, err := blob.NewS3(bucket)
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.New(t)
	return startAppWith(t, env, env.Redis, options{env: vars, store: s3, signer: s3}), s3
}

// TestS3UploadURLsRefuseWhatWasNotDeclared sends what a client should not
// through the URLs prepare hands out: the bucket refuses a body larger
// than declared, another content type, a PUT after the URL expired and a
// PUT after finalize; a finalize for bytes that never arrived is
// upload_missing.
func TestS3UploadURLsRefuseWhatWasNotDeclared(t *testing.T) {
	a, s3, _ := s3App(t, map[string]string{"UPLOAD_URL_TTL": "10s"})
	key := a.user("sam@example.org", false)
	project := a.newProject(key)
	ctx := context.Background()

	late := []photo{{name: "late.jpg", data: []byte("bytes that come too late")}}
	ups := a.prepare(key, project, late)
	if ups[0].Headers["If-None-Match"] != "*" {
		t.Fatalf("the upload URL does not bind one PUT: %+v", ups[0].Headers)
	}
	time.Sleep(time.Until(ups[0].ExpiresAt) + time.Second)
	if code, err := testenv.Put(ups[0].UploadURL, ups[0].Headers, late[0].data); err != nil || code != http.StatusForbidden {
		t.Errorf("PUT after the URL expired: %d %v, want 403", code, err)
	}
	r := a.finalize(key, project, ups, []string{late[0].sum()})
	expect(t, r, 200, "")
	if got := r.json(t)["assets"].([]any)[0].(map[string]any); got["status"] != "pending_upload" ||
		got["error"].(map[string]any)["code"] != "upload_missing" {
		t.Errorf("finalize of bytes that never arrived: %v", got)
	}

	ps := []photo{{name: "a.jpg", data: []byte("the declared bytes of a jpeg")}}
	ups = a.prepare(key, project, ps)
	u := ups[0]
	if code, err := testenv.Put(u.UploadURL, u.Headers, append(bytes.Clone(ps[0].data), " and more"...)); err == nil && code/100 == 2 {
		t.Errorf("the bucket took a body larger than declared: %d", code)
	}
	png := map[string]string{"Content-Type": "image/png", "If-None-Match": "*"}
	if code, err := testenv.Put(u.UploadURL, png, ps[0].data); err == nil && code/100 == 2 {
		t.Errorf("the bucket took another content type: %d", code)
	}
	if _, err := s3.Stat(ctx, keyOf(project, u.AssetID)); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a refused PUT left an object: %v", err)
	}
	if code, err := testenv.Put(u.UploadURL, u.Headers, ps[0].data); err != nil || code != http.StatusOK {
		t.Fatalf("PUT as declared: %d %v", code, err)
	}
	r = a.finalize(key, project, ups, []string{ps[0].sum()})
	expect(t, r, 200, "")
	if got := r.json(t)["assets"].([]any)[0].(map[string]any); got["status"] != "uploaded" {
		t.Fatalf("finalize: %v", got)
	}
	// The URL still lives, but the accepted bytes stay: with its headers
	// the bucket answers 412, without them the signature fails.
	other := bytes.ToUpper(ps[0].data)
	if code, err := testenv.Put(u.UploadURL, u.Headers, other); err != nil || code != http.StatusPreconditionFailed {
		t.Errorf("PUT after finalize: %d %v, want 412", code, err)
	}
	if code, err := testenv.Put(u.UploadURL, map[string]string{"Content-Type": u.Headers["Content-Type"]}, other); err == nil && code/100 == 2 {
		t.Errorf("PUT after finalize without If-None-Match: %d", code)
	}
	if info, err := s3.Stat(ctx, keyOf(project, u.AssetID)); err != nil || info.SHA256 != ps[0].sum() {
		t.Errorf("the finalized original changed: %+v %v", info, err)
	}
}

// TestS3OutageIsNamedAndRetryable cuts the bucket off: /readyz is 503
// naming blobs and no error, finalize is 503 storage_unavailable, and the
// same finalize succeeds once the bucket is back.
func TestS3OutageIsNamedAndRetryable(t *testing.T) {
	a, _, proxy := s3App(t, nil)
	key := a.user("kim@example.org", false)
	project := a.newProject(key)
	expect(t, a.do("GET", "/readyz", "", nil), 200, "")

	ps := []photo{{name: "a.jpg", data: []byte("bytes of a jpeg")}}
	ups := a.prepare(key, project, ps)
	if code, err := testenv.Put(ups[0].UploadURL, ups[0].Headers, ps[0].data); err != nil || code != http.StatusOK {
		t.Fatalf("PUT: %d %v", code, err)
	}
	proxy.Down()
	r := a.do("GET", "/readyz", "", nil)
	expect(t, r, 503, "not_ready")
	details := r.json(t)["details"].(map[string]any)
	if details["blobs"] != "unavailable" || details["postgres"] != nil || details["redis"] != nil {
		t.Errorf("readyz details %v, want blobs named alone", details)
	}
	if strings.Contains(string(r.body), proxy.Addr) || strings.Contains(string(r.body), "refused") {
		t.Errorf("readyz shows the error: %s", r.body)
	}
	expect(t, a.finalize(key, project, ups, []string{ps[0].sum()}), 503, "storage_unavailable")

	proxy.Up()
	expect(t, a.do("GET", "/readyz", "", nil), 200, "")
	r = a.finalize(key, project, ups, []string{ps[0].sum()})
	expect(t, r, 200, "")
	if got := r.json(t)["assets"].([]any)[0].(map[string]any); got["status"] != "uploaded" {
		t.Fatalf("finalize once the bucket is back: %v", got)
	}
}

func keyOf(project, asset string) string {
	return blob.OriginalKey(uuid.MustParse(project), uuid.MustParse(asset))
}
