package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/blob"
)

type putResult struct {
	i int
	r reply
}

// A signed PUT URL replayed many times at once: one PUT writes, every other
// is refused before it streams anything, and the bytes kept are those of
// the one that wrote.
func TestParallelPutsOfOneURLWriteOnce(t *testing.T) {
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	const size = 1 << 20 // past what the server drains of an unread body, so refusals answer at once
	body := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, size) }
	ups := a.prepare(key, project, []photo{{name: "a.jpg", data: body(0)}})
	up := ups[0]

	// Each PUT sends its headers and then waits for its body, so the one
	// that holds the upload holds it until this test lets it go.
	const n = 12
	writers := make([]*io.PipeWriter, n)
	results := make(chan putResult, n)
	for i := range n {
		pr, pw := io.Pipe()
		writers[i] = pw
		req, _ := http.NewRequest("PUT", up.UploadURL, pr)
		req.ContentLength = size
		for k, v := range up.Headers {
			req.Header.Set(k, v)
		}
		go func() {
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				results <- putResult{i, reply{status: -1, body: []byte(err.Error())}}
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			results <- putResult{i, reply{status: res.StatusCode, header: res.Header, body: b}}
		}()
	}
	t.Cleanup(func() {
		for _, w := range writers {
			w.CloseWithError(io.ErrUnexpectedEOF)
		}
	})

	deadline := time.After(2 * time.Minute)
	answered := map[int]bool{}
	for len(answered) < n-1 {
		select {
		case res := <-results:
			expect(t, res.r, 409, "upload_in_progress")
			answered[res.i] = true
		case <-deadline:
			t.Fatalf("%d of %d PUTs refused after 2 minutes", len(answered), n-1)
		}
	}
	holder := 0
	for answered[holder] {
		holder++
	}
	go func() {
		writers[holder].Write(body(holder))
		writers[holder].Close()
	}()
	var won putResult
	select {
	case won = <-results:
	case <-deadline:
		t.Fatal("the PUT holding the upload did not end")
	}
	expect(t, won.r, 201, "")
	good := photo{data: body(holder)}
	if got := won.r.json(t)["checksumSha256"]; got != good.sum() {
		t.Fatalf("checksum %v, want the writer's %s", got, good.sum())
	}
	stored, _, err := a.blobs.Open(context.Background(), blob.OriginalKey(uuid.MustParse(project), uuid.MustParse(up.AssetID)))
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := io.ReadAll(stored)
	stored.Close()
	if !bytes.Equal(kept, good.data) {
		t.Fatalf("stored %d bytes starting %q, want the writer's", len(kept), kept[:min(len(kept), 8)])
	}

	// The upload is free again once a PUT ends, whether it failed (here, a
	// body longer than declared) or succeeded.
	req, _ := http.NewRequest("PUT", up.UploadURL, io.MultiReader(bytes.NewReader(body(1)), bytes.NewReader([]byte("x"))))
	req.ContentLength = -1
	for k, v := range up.Headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 413 {
		t.Fatalf("overlong PUT: status %d", res.StatusCode)
	}
	expect(t, a.put(up.UploadURL, up.Headers, body(2)), 201, "")
	expect(t, a.put(up.UploadURL, up.Headers, body(3)), 201, "")
	expect(t, a.finalize(key, project, ups, []string{photo{data: body(3)}.sum()}), 200, "")
}
