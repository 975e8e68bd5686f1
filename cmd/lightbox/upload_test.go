package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/testsupport/procs"
	"lightbox/testsupport/testenv"
)

// hostile is a loopback server that speaks the upload API as a server
// bent on harm would: escape sequences in its words, upload URLs leading
// elsewhere with headers of its choosing, an event stream that never ends
// its line. Its session declares its own origin as the only upload origin.
type hostile struct {
	*httptest.Server
	project, denied string
	title           string
	// prepare answers a prepare of n files; nil answers URLs to /blobs/.
	prepare func(w http.ResponseWriter, n int)
	// realtime serves the event stream; nil sends a comment and waits.
	realtime http.HandlerFunc

	mu   sync.Mutex
	puts []http.Header
}

// newHostile starts a hostile server once configure has set it up.
func newHostile(t *testing.T, configure func(h *hostile)) *hostile {
	h := &hostile{project: uuid.NewString(), denied: uuid.NewString(), title: "Trip"}
	batch := uuid.NewString()
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	}
	mux.HandleFunc("GET /v1/session", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"user": map[string]any{"id": uuid.NewString(), "email": "a@example.org", "isAdmin": false},
			"uploadOrigins": []string{h.URL}})
	})
	mux.HandleFunc("GET /v1/projects/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == h.denied {
			reply(w, 403, map[string]any{"code": "forbidden", "message": "\x1b]0;owned\x07\x1b[2JNot yours.\x1b]52;c;ZXZpbA==\x07"})
			return
		}
		reply(w, 200, map[string]any{"id": h.project, "title": h.title, "status": "active"})
	})
	mux.HandleFunc("GET /v1/projects/{id}/assets", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"items": []any{}, "pageInfo": map[string]any{"nextCursor": nil}})
	})
	mux.HandleFunc("GET /v1/realtime", func(w http.ResponseWriter, r *http.Request) {
		if h.realtime != nil {
			h.realtime(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": hello\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	mux.HandleFunc("POST /v1/projects/{id}/{action}", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Files  []any `json:"files"`
			Assets []struct {
				AssetID string `json:"assetId"`
			} `json:"assets"`
		}
		json.NewDecoder(r.Body).Decode(&in)
		switch r.PathValue("action") {
		case "assets:prepareUpload":
			if h.prepare != nil {
				h.prepare(w, len(in.Files))
				return
			}
			var ups []any
			for i := range in.Files {
				ups = append(ups, map[string]any{"clientFileId": fmt.Sprint(i), "assetId": uuid.NewString(),
					"uploadUrl": h.URL + "/blobs/" + fmt.Sprint(i), "headers": map[string]string{"Content-Type": "image/jpeg"},
					"expiresAt": time.Now().Add(5 * time.Minute)})
			}
			reply(w, 200, map[string]any{"uploads": ups})
		case "assets:finalizeUpload":
			var as []any
			for _, a := range in.Assets {
				as = append(as, map[string]any{"assetId": a.AssetID, "status": "uploaded"})
			}
			reply(w, 200, map[string]any{"batchId": batch, "queuedJobs": []string{}, "assets": as})
		default:
			http.NotFound(w, r)
		}
	})
	mux.HandleFunc("PUT /blobs/{key}", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.puts = append(h.puts, r.Header.Clone())
		h.mu.Unlock()
		w.WriteHeader(201)
	})
	mux.HandleFunc("GET /v1/batches/{id}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"batch": map[string]any{"id": batch, "status": "completed", "total": 1, "completed": 1,
			"completedAt": time.Now()}, "jobs": []any{}})
	})
	h.Server = httptest.NewUnstartedServer(mux)
	configure(h)
	h.Start()
	t.Cleanup(h.Close)
	return h
}

// bystander is a loopback server the upload must never reach: it counts
// the requests it gets.
type bystander struct {
	url  string
	mu   sync.Mutex
	hits []string
}

func newBystander(t *testing.T, addr string) *bystander {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	b := &bystander{url: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.hits = append(b.hits, r.Method+" "+r.URL.String())
		b.mu.Unlock()
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(201)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return b
}

// controls lists what a terminal would act on; none may reach the user.
var controls = []string{"\x1b", "\x07", "\u009b", "\u009d", "\u202e", "\u2066", "\r"}

func shown(t *testing.T, what, out string) {
	t.Helper()
	for _, c := range controls {
		if strings.Contains(out, c) {
			t.Errorf("%s shows %q to the user:\n%q", what, c, out)
		}
	}
}

// uploadCommand is the built lightbox command pointed at h.
func uploadCommand(t *testing.T, h *hostile) *testenv.Command {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	t.Cleanup(cancel)
	cmd := testenv.BuildCommand(ctx, t, ".")
	cmd.Env = []string{"LIGHTBOX_URL=" + h.URL, "LIGHTBOX_API_KEY=lba_test"}
	return cmd
}

func photo(t *testing.T, name string) string {
	return filepath.Join(testenv.Corpus(t), "photos", name)
}

// badPrepare refuses a prepare with escape sequences, C1 controls and a
// bidi override in its code, message and field message.
func badPrepare(w http.ResponseWriter, _ int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(400)
	fmt.Fprintf(w, `{"code":"validation_failed\u001b[5m","message":"\u001b]0;owned\u0007Bad.","details":{"fields":{"files[0].byteSize":"\u001b[2J\u001b]52;c;ZXZpbA==\u0007is too large\u009b31m\u202egpj.exe"}}}`)
}

// TestUploadShowsNoTerminalControlsFromTheServer: a server's error text,
// field messages and project title carry escape sequences (a title
// change, a clipboard write, a screen clear), C1 controls and a bidi
// override; the user sees the words without them, with progress lines
// and with --json.
func TestUploadShowsNoTerminalControlsFromTheServer(t *testing.T) {
	h := newHostile(t, func(h *hostile) {
		h.title = "Trip\x1b]0;owned\x07\u202e"
		h.prepare = badPrepare
	})
	lightbox := uploadCommand(t, h).Run

	status, stdout, stderr := lightbox("upload", "--project", h.project, photo(t, "wood.jpg"))
	if status != 1 || !strings.Contains(stderr, "1 of 1 files failed") || !strings.Contains(stderr, "byteSize is too large") ||
		!strings.Contains(stderr, "Trip") {
		t.Errorf("status %d, stderr:\n%q\nwant 1 and the failure named", status, stderr)
	}
	shown(t, "the progress lines and error", stdout+stderr)

	status, stdout, stderr = lightbox("upload", "--json", "--project", h.project, photo(t, "wood.jpg"))
	if status != 1 || !strings.Contains(stdout, `"event":"failed"`) {
		t.Errorf("--json: status %d, stdout:\n%s", status, stdout)
	}
	shown(t, "--json", stdout+stderr)

	status, _, stderr = lightbox("upload", "--project", h.denied, photo(t, "wood.jpg"))
	if status != 1 || !strings.Contains(stderr, "Not yours.") {
		t.Errorf("a refused project: status %d, stderr:\n%q", status, stderr)
	}
	shown(t, "the error that ends the run", stderr)
}

// TestUploadSendsBytesOnlyToTheServerOrItsStorage: the server hands out
// upload URLs on another loopback host (127.0.0.2) and on another port of
// its own host; neither gets a request, the files fail naming the host,
// and the URL on the server's own origin gets the file with only the
// headers an upload needs, whatever else the server named.
func TestUploadSendsBytesOnlyToTheServerOrItsStorage(t *testing.T) {
	elsewhere := []*bystander{newBystander(t, "127.0.0.2:0"), newBystander(t, "127.0.0.1:0")}
	h := newHostile(t, func(hh *hostile) {
		hh.prepare = func(w http.ResponseWriter, n int) {
			var ups []any
			for i := range n {
				u := hh.URL + "/blobs/" + fmt.Sprint(i)
				if i < len(elsewhere) {
					u = elsewhere[i].url + "/steal"
				}
				ups = append(ups, map[string]any{"clientFileId": fmt.Sprint(i), "assetId": uuid.NewString(), "uploadUrl": u,
					"headers": map[string]string{"Content-Type": "image/jpeg", "Authorization": "Bearer lba_stolen",
						"Cookie": "lightbox_session=stolen", "X-Forwarded-For": "203.0.113.7", "X-Api-Key": "lba_test"},
					"expiresAt": time.Now().Add(5 * time.Minute)})
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"uploads": ups})
		}
	})
	lightbox := uploadCommand(t, h).Run
	status, _, stderr := lightbox("upload", "--concurrency", "1", "--project", h.project,
		photo(t, "wood.jpg"), photo(t, "dune.jpg"), photo(t, "storm.jpg"))

	for _, b := range elsewhere {
		b.mu.Lock()
		if len(b.hits) > 0 {
			t.Errorf("%s, which the server's session does not name, got %v", b.url, b.hits)
		}
		b.mu.Unlock()
		host := strings.TrimPrefix(b.url, "http://")
		if !strings.Contains(stderr, "leads to http://"+host) || !strings.Contains(stderr, "the file was not sent") {
			t.Errorf("the refusal of %s is not named:\n%s", host, stderr)
		}
	}
	if status != 1 || !strings.Contains(stderr, "2 of 3 files failed") {
		t.Errorf("status %d, want 1 with two files failed:\n%s", status, stderr)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.puts) != 1 {
		t.Fatalf("%d PUTs to the server's own origin, want 1", len(h.puts))
	}
	for name := range h.puts[0] {
		switch http.CanonicalHeaderKey(name) {
		case "Content-Type", "Content-Length", "User-Agent", "Accept-Encoding":
		default:
			t.Errorf("the PUT carried %s: %q", name, h.puts[0].Get(name))
		}
	}
	if got := h.puts[0].Get("Content-Type"); got != "image/jpeg" {
		t.Errorf("the PUT's Content-Type is %q", got)
	}
}

// TestUploadBoundsAnEventStreamLine: the event stream sends a line of
// 3 MiB; the command drops the stream with a clear message rather than
// hold the line, follows the batch by polling, and finishes.
func TestUploadBoundsAnEventStreamLine(t *testing.T) {
	h := newHostile(t, func(h *hostile) { h.realtime = longLine })
	status, _, stderr := uploadCommand(t, h).Run("upload", "--project", h.project, photo(t, "wood.jpg"))
	if status != 0 || !strings.Contains(stderr, "event stream sent a line longer than 1 MiB") ||
		!strings.Contains(stderr, "processed 1, 0 failed") {
		t.Errorf("status %d, stderr:\n%s\nwant 0, the long line named, and the upload followed to its end", status, stderr)
	}
}

// longLine is an event stream whose first line is 3 MiB long.
func longLine(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "event: batch.updated\ndata: ")
	chunk := strings.Repeat("x", 64<<10)
	for range 3 << 4 { // 3 MiB in 64 KiB writes
		if _, err := io.WriteString(w, chunk); err != nil {
			return
		}
	}
	io.WriteString(w, "\n\n")
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// TestUploadSendsSidecars: against a real server and worker, a photo's
// NAME.xmp goes with it and a sidecar without a photo is named in the
// summary; neither is counted as a photo.
func TestUploadSendsSidecars(t *testing.T) {
	env := testenv.New(t)
	stack := procs.NewStack(t, env.DSN, env.RedisURL)
	srv := stack.AddServer(nil)
	stack.AddWorker(nil)
	u, err := env.Store.CreateUser(context.Background(), "ana@example.org", false)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := env.Store.CreateAPIKey(context.Background(), u.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	jpeg, err := os.ReadFile(photo(t, "wood.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	packet := `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` +
		`<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:Rating="5"/></rdf:RDF></x:xmpmeta>`
	for name, body := range map[string]string{"IMG.jpg": string(jpeg), "IMG.xmp": packet, "orphan.xmp": packet} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	cmd := testenv.BuildCommand(ctx, t, ".")
	cmd.Env = []string{"LIGHTBOX_URL=" + srv.URL, "LIGHTBOX_API_KEY=" + key}
	status, _, stderr := cmd.Run("upload", "--new", "Pier", dir)
	if status != 0 || !strings.Contains(stderr, "1 files found") || !strings.Contains(stderr, "0 of other types ignored") ||
		!strings.Contains(stderr, "sidecars: 1 sent, 1 skipped (orphan.xmp: no photo)") {
		t.Fatalf("status %d, stderr:\n%s", status, stderr)
	}
}
