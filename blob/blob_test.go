package blob_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lightbox/blob"
)

func TestBadKeys(t *testing.T) {
	d, _ := blob.NewDisk(t.TempDir())
	for _, k := range []string{"", "/etc/passwd", "a/../../b", "..", "a/./b", "a//b", "a\\b", "a\x00b", "a\nb"} {
		if _, err := d.Put(context.Background(), k, strings.NewReader("x"), 10); !errors.Is(err, blob.ErrBadKey) {
			t.Errorf("key %q: %v, want ErrBadKey", k, err)
		}
	}
}

func TestSignedURLs(t *testing.T) {
	s := blob.NewSigner([]byte("0123456789abcdef0123456789abcdef"), "http://127.0.0.1:8080/blobs/")
	now := time.Unix(1_800_000_000, 0)
	g := blob.Grant{Method: "PUT", Key: "originals/p/a b", Expires: now.Add(5 * time.Minute), MaxSize: 1000, ContentType: "image/jpeg"}
	raw := s.URL(g)
	if !strings.HasPrefix(raw, "http://127.0.0.1:8080/blobs/originals/p/a%20b?") {
		t.Fatalf("url %s", raw)
	}
	u, _ := url.Parse(raw)
	if _, err := s.Verify("PUT", "originals/p/a b", u.Query(), now); err != nil {
		t.Fatalf("valid url refused: %v", err)
	}
	if _, err := s.Verify("PUT", "originals/p/a b", u.Query(), now.Add(6*time.Minute)); !errors.Is(err, blob.ErrExpired) {
		t.Fatalf("expired url: %v", err)
	}
	tamper := func(k, v string) url.Values {
		q := u.Query()
		q.Set(k, v)
		return q
	}
	for name, q := range map[string]url.Values{
		"max":  tamper("max", "999999"),
		"ct":   tamper("ct", "image/png"),
		"exp":  tamper("exp", "1900000000"),
		"sig":  tamper("sig", strings.Repeat("0", 64)),
		"none": tamper("sig", ""),
	} {
		if _, err := s.Verify("PUT", "originals/p/a b", q, now); !errors.Is(err, blob.ErrBadSignature) {
			t.Errorf("tampered %s: %v", name, err)
		}
	}
	if _, err := s.Verify("GET", "originals/p/a b", u.Query(), now); !errors.Is(err, blob.ErrBadSignature) {
		t.Errorf("PUT url used for GET: %v", err)
	}
	if _, err := s.Verify("PUT", "originals/p/other", u.Query(), now); !errors.Is(err, blob.ErrBadSignature) {
		t.Errorf("url used for another key: %v", err)
	}
}

func assertNoTempFiles(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if e != nil && strings.HasPrefix(e.Name(), ".upload-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

func TestRemoveStaleDeletesOnlyOldTemporaryFiles(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, _ := blob.NewDisk(root)
	d.Put(ctx, "exports/e/archive.zip", strings.NewReader("done"), 10)
	old := filepath.Join(root, "exports", "e", ".upload-123")
	fresh := filepath.Join(root, "exports", "e", ".upload-456")
	os.WriteFile(old, []byte("half"), 0o644)
	os.WriteFile(fresh, []byte("writing"), 0o644)
	os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour))

	n, err := d.RemoveStale(ctx, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("removed %d (%v), want 1", n, err)
	}
	if _, err := os.Stat(old); err == nil {
		t.Fatal("the stale temporary file is still there")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatal("a write in progress was removed")
	}
	if _, err := d.Stat(ctx, "exports/e/archive.zip"); err != nil {
		t.Fatal("a published object was removed")
	}
}

// TestOpenDiskThroughInterfaces uses the disk backend only through what
// blob declares, as the server and worker do.
func TestOpenDiskThroughInterfaces(t *testing.T) {
	ctx := context.Background()
	if _, _, err := blob.Open(blob.Config{Dir: t.TempDir(), BaseURL: "http://x/blobs"}); err == nil {
		t.Fatal("opened without a secret")
	}
	st, signer, err := blob.Open(blob.Config{Dir: t.TempDir(), Secret: []byte("0123456789abcdef0123456789abcdef"), BaseURL: "http://127.0.0.1:8080/blobs"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(blob.StaleRemover); !ok {
		t.Error("the disk store does not remove stale temporary files")
	}
	verifier, ok := signer.(blob.URLVerifier)
	if !ok {
		t.Fatal("the disk backend's signer cannot check the URLs it serves")
	}

	expires := time.Now().Add(5 * time.Minute).Truncate(time.Second)
	put, err := signer.SignPut(ctx, blob.Grant{Method: "GET", Key: "originals/p/a", Expires: expires, MaxSize: 10, ContentType: "image/jpeg"})
	if err != nil {
		t.Fatal(err)
	}
	if put.Headers["Content-Type"] != "image/jpeg" || !put.Expires.Equal(expires) {
		t.Fatalf("put url %+v", put)
	}
	key, q := splitSigned(t, put.URL, "http://127.0.0.1:8080/blobs/")
	g, err := verifier.Verify("PUT", key, q, time.Now())
	if err != nil || g.Key != "originals/p/a" || g.MaxSize != 10 || g.ContentType != "image/jpeg" || !g.Expires.Equal(expires) {
		t.Fatalf("put grant %+v, %v", g, err)
	}
	if _, err := verifier.Verify("GET", key, q, time.Now()); !errors.Is(err, blob.ErrBadSignature) {
		t.Errorf("an upload URL read the object: %v", err)
	}

	get, err := signer.SignGet(ctx, blob.Grant{Key: "exports/e.zip", Expires: expires, ContentType: "application/zip"})
	if err != nil || len(get.Headers) != 0 || !get.Expires.Equal(expires) {
		t.Fatalf("get url %+v, %v", get, err)
	}
	key, q = splitSigned(t, get.URL, "http://127.0.0.1:8080/blobs/")
	if g, err := verifier.Verify("GET", key, q, time.Now()); err != nil || g.ContentType != "application/zip" {
		t.Fatalf("get grant %+v, %v", g, err)
	}
	if _, err := verifier.Verify("GET", key, q, expires); !errors.Is(err, blob.ErrExpired) {
		t.Errorf("used at its expiry: %v", err)
	}
}

// splitSigned takes a signed URL apart as the route serving it does.
func splitSigned(t *testing.T, raw, base string) (string, url.Values) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || !strings.HasPrefix(raw, base) {
		t.Fatalf("url %s", raw)
	}
	return strings.TrimPrefix(u.Path, "/blobs/"), u.Query()
}
