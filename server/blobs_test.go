package server_test

import (
	"strings"
	"testing"

	"lightbox/blob"
	"lightbox/internal/testenv"
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
