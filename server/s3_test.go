package server_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
	"lightbox/worker"
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

// TestS3UploadURLsExpire sends a photo through the URL prepare handed
// out once the URL expired: the bucket refuses it, and a finalize for
// bytes that never arrived is upload_missing.
func TestS3UploadURLsExpire(t *testing.T) {
	t.Parallel()
	a, _, _ := s3App(t, map[string]string{"UPLOAD_URL_TTL": "10s"})
	key := a.user("sam@example.org", false)
	project := a.newProject(key)

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
	if got := decode[finalized](t, r).Assets[0]; got.Status != "pending_upload" || got.Error == nil || got.Error.Code != "upload_missing" {
		t.Errorf("finalize of bytes that never arrived: %v", got)
	}
}

// TestS3UploadURLsRefuseWhatWasNotDeclared sends what a client should not
// through the URLs prepare hands out: the bucket refuses a body larger
// than declared, another content type and a PUT after finalize. The URLs
// live for the default time, which no busy machine runs out.
func TestS3UploadURLsRefuseWhatWasNotDeclared(t *testing.T) {
	t.Parallel()
	a, s3, _ := s3App(t, nil)
	key := a.user("sam@example.org", false)
	project := a.newProject(key)
	ctx := context.Background()

	ps := []photo{{name: "a.jpg", data: []byte("the declared bytes of a jpeg")}}
	ups := a.prepare(key, project, ps)
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
	r := a.finalize(key, project, ups, []string{ps[0].sum()})
	expect(t, r, 200, "")
	if got := decode[finalized](t, r).Assets[0]; got.Status != "uploaded" {
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
	t.Parallel()
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
	details := details(t, r)
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
	if got := decode[finalized](t, r).Assets[0]; got.Status != "uploaded" {
		t.Fatalf("finalize once the bucket is back: %v", got)
	}
}

func keyOf(project, asset string) string {
	return blob.OriginalKey(uuid.MustParse(project), uuid.MustParse(asset))
}

// TestS3DiscardedOriginalPutBackIsDeletedOnceItsURLExpires uploads two
// copies of one photo to the bucket. Finalize makes the second a duplicate
// and deletes its object, but its URL still lives and the bucket takes a
// second PUT. The sweep leaves that object while the URL lives and
// deletes it once the URL has expired.
func TestS3DiscardedOriginalPutBackIsDeletedOnceItsURLExpires(t *testing.T) {
	t.Parallel()
	a, s3, _ := s3App(t, nil)
	key := a.user("sam@example.org", false)
	project := a.newProject(key)
	ctx := context.Background()
	data := []byte("the same bytes, uploaded twice")
	ps := []photo{{name: "a.jpg", data: data}, {name: "b.jpg", data: data}}
	ups := a.prepare(key, project, ps)
	for _, u := range ups {
		if code, err := testenv.Put(u.UploadURL, u.Headers, data); err != nil || code != http.StatusOK {
			t.Fatalf("PUT: %d %v", code, err)
		}
	}
	r := a.finalize(key, project, ups, []string{ps[0].sum(), ps[1].sum()})
	expect(t, r, 200, "")
	if got := decode[finalized](t, r).Assets[1]; got.Status != "duplicate" {
		t.Fatalf("finalize of the second copy: %v", got)
	}
	dup := keyOf(project, ups[1].AssetID)
	stored := func() bool {
		_, err := s3.Stat(ctx, dup)
		if err != nil && !errors.Is(err, blob.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if stored() {
		t.Fatal("finalize kept the duplicate's object")
	}
	if code, err := testenv.Put(ups[1].UploadURL, ups[1].Headers, data); err != nil || code != http.StatusOK {
		t.Fatalf("setup: the bucket refused the second PUT to a live URL: %d %v", code, err)
	}

	w, err := worker.New(worker.Deps{Config: a.cfg, Store: a.env.Store, Blobs: s3, Redis: a.env.Redis,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	sweep := func() {
		t.Helper()
		if err := w.Handler().ProcessTask(ctx, tasks.NewSweep()); err != nil {
			t.Fatal(err)
		}
	}
	sweep()
	if !stored() {
		t.Fatal("the sweep deleted the object while its URL lives")
	}
	a.env.Age(t, "blob_discards", "url_expires_at", 10*time.Minute, "blob_key = $1", dup)
	sweep()
	if stored() {
		t.Fatal("the object put back after finalize outlived its URL")
	}
	if _, err := s3.Stat(ctx, keyOf(project, ups[0].AssetID)); err != nil {
		t.Fatalf("the original's object: %v", err)
	}
}
