package server_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/testsupport/testenv"
)

type putResult struct {
	i int
	r reply
}

// A signed PUT URL replayed many times at once: one PUT writes, every other
// is refused before it streams anything, and the bytes kept are those of
// the one that wrote.
func TestParallelPutsOfOneURLWriteOnce(t *testing.T) {
	t.Parallel()
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

// stall sends a request whose body stops after sent, of the declared
// length, and returns the answer's status line: "" when the server closed
// the connection without one. It fails t if the server neither answers nor
// closes; the wait is generous, as it only bounds a hang.
func stall(t *testing.T, rawURL, method string, headers map[string]string, declared int, sent []byte) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var req strings.Builder
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", method, u.RequestURI(), u.Host, declared)
	for k, v := range headers {
		fmt.Fprintf(&req, "%s: %s\r\n", k, v)
	}
	req.WriteString("\r\n")
	if _, err := conn.Write(append([]byte(req.String()), sent...)); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
	line, err := bufio.NewReader(conn).ReadString('\n')
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s %s: a body that stopped arriving got no answer in 2 minutes", method, u.Path)
	}
	return strings.TrimSpace(line)
}

// A PUT whose body stops arriving fails once BODY_READ_TIMEOUT passes
// without a byte, keeps nothing and frees its URL for the next PUT; a JSON
// request that stalls, before any key is checked, ends too.
func TestStalledBodiesEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{dataDir: dir, env: map[string]string{"BODY_READ_TIMEOUT": "1s"}})
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	p := corpus(t, "photos/wood.jpg")[0]
	u := a.prepare(key, project, []photo{p})[0]

	if got := stall(t, u.UploadURL, "PUT", u.Headers, len(p.data), p.data[:10]); got != "" && !strings.HasPrefix(got, "HTTP/1.1 408") {
		t.Fatalf("stalled PUT answered %q, want 408 or a closed connection", got)
	}
	if asset, err := a.env.Store.AssetByID(context.Background(), uuid.MustParse(u.AssetID)); err != nil || asset.UploadedAt != nil {
		t.Fatalf("a stalled upload was recorded (%v)", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "blobs", "originals", "*", ".upload-*")); len(left) > 0 {
		t.Fatalf("partial files left: %v", left)
	}
	expect(t, a.put(u.UploadURL, u.Headers, p.data), 201, "")

	login := map[string]string{"Content-Type": "application/json"}
	if got := stall(t, a.url+"/v1/auth/login", "POST", login, 100, []byte(`{"email":`)); got != "" && !strings.HasPrefix(got, "HTTP/1.1 4") {
		t.Fatalf("stalled login answered %q, want a 4xx or a closed connection", got)
	}
}
