package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"lightbox/blob"
	"lightbox/testsupport/testenv"
)

// elsewhere signs URLs that lead to another service, as an object store's
// presigned URLs do: it has no Verify.
type elsewhere struct{ blob.URLSigner }

func TestBlobRoutesOnlyWhenTheBackendsURLsLeadHere(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	bucket := elsewhere{blob.NewSigner([]byte(testUploadSecret), "https://bucket.example.org")}
	a := startAppWith(t, env, env.Redis, options{signer: bucket})
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	p := corpus(t, "photos/wood.jpg")[0]

	u := a.prepare(key, project, []photo{p})[0]
	if !strings.HasPrefix(u.UploadURL, "https://bucket.example.org/originals/") || u.Headers["Content-Type"] != "image/jpeg" {
		t.Fatalf("upload %+v", u)
	}
	objectKey := strings.TrimPrefix(strings.SplitN(u.UploadURL, "?", 2)[0], "https://bucket.example.org/")
	ownURL := a.url + "/blobs/" + objectKey + "?" + strings.SplitN(u.UploadURL, "?", 2)[1]
	expect(t, a.put(ownURL, u.Headers, p.data), 404, "route_not_found")
	expect(t, a.do("GET", "/blobs/"+objectKey, "", nil), 404, "route_not_found")
}

// TestBlobAnswersForbidSniffingAndScripts: a file served from the blob
// routes is shown as the type it was signed for and runs nothing, and the
// routes' refusals say the same. An uploaded HTML page named .jpg would
// otherwise run as a page of this origin in a browser that sniffs it.
func TestBlobAnswersForbidSniffingAndScripts(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	a := startApp(t, env, env.Redis)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	page := photo{name: "page.jpg", data: []byte("<!doctype html><script>alert(document.cookie)</script>")}
	u := a.prepare(key, project, []photo{page})[0]
	put := a.put(u.UploadURL, u.Headers, page.data)
	get := a.do("GET", strings.TrimPrefix(u.UploadURL, a.url), "", nil) // a PUT URL does not read
	missing := a.do("GET", "/blobs/originals/none", "", nil)
	objectKey := strings.SplitN(strings.TrimPrefix(u.UploadURL, a.url+"/blobs/"), "?", 2)[0]
	signed, err := blob.NewSigner([]byte(testUploadSecret), a.url+"/blobs").SignGet(context.Background(),
		blob.Grant{Key: objectKey, Expires: time.Now().Add(time.Hour), ContentType: "image/jpeg"})
	if err != nil {
		t.Fatal(err)
	}
	stored := a.do("GET", strings.TrimPrefix(signed.URL, a.url), "", nil)
	for name, r := range map[string]reply{"PUT": put, "GET with a PUT URL": get, "GET unsigned": missing, "GET signed": stored} {
		if r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s (%d): X-Content-Type-Options %q, want nosniff", name, r.status, r.header.Get("X-Content-Type-Options"))
		}
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
			t.Errorf("%s (%d): Content-Security-Policy %q lets the file load or run something", name, r.status, csp)
		}
	}
	if put.status != 201 || stored.status != 200 || string(stored.body) != string(page.data) {
		t.Fatalf("PUT %d, signed GET %d %q: the file was not stored and served", put.status, stored.status, stored.body)
	}
}
