package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/chain"
	"lightbox/embedding"
	"lightbox/events"
	"lightbox/imaging"
	"lightbox/retryafter"
	"lightbox/store"
	"lightbox/testsupport/testenv"
	"lightbox/worker"
)

// The helpers that more than one test file uses. Building the app is in
// main_test.go; measuring, in bench_test.go.

// ---- Requests and their answers ----

type reply struct {
	status int
	header http.Header
	body   []byte
}

// json is the body as a JSON object, for the odd field no reply type has.
func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	return decode[map[string]any](t, r)
}

// decode reads r's body as a T, failing the test when it is not one.
func decode[T any](t testing.TB, r reply) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body is not a %T: %v\n%s", v, err, r.body)
	}
	return v
}

// apiErr is the body of every error (server/errors.go).
type apiErr struct {
	Code      string
	Message   string
	Details   map[string]any
	RequestID string
}

// pageOf is one page of a list of T.
type pageOf[T any] struct {
	Items    []T
	PageInfo struct{ NextCursor *string }
}

// created is the id of what a request made.
type created struct{ ID string }

// queued is the answer of a request that started work.
type queued struct {
	BatchID    string
	QueuedJobs []string
}

// finalized is finalize's answer: the work it queued and each asset's fate.
type finalized struct {
	queued
	Assets []struct {
		AssetID, Status, DuplicateOf string
		Error                        *struct{ Code, Message string }
	}
}

// do sends one request. body may be a string (sent as is) or a value to encode.
func (a *app) do(method, path, key string, body any, headers ...string) reply {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		buf, _ := json.Marshal(b)
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: b}
}

func expect(t testing.TB, r reply, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if code != "" {
		e := decode[apiErr](t, r)
		if e.Code != code {
			t.Fatalf("code %v, want %s; body %s", e.Code, code, r.body)
		}
		if e.Message == "" || e.RequestID == "" || e.RequestID != r.header.Get("X-Request-Id") {
			t.Fatalf("error body lacks message or matching requestId: %s", r.body)
		}
	}
}

// details is an error's details.
func details(t testing.TB, r reply) map[string]any {
	t.Helper()
	return decode[apiErr](t, r).Details
}

// fields is a validation error's fields, each with its problem.
func fields(t testing.TB, r reply) map[string]any {
	t.Helper()
	f, _ := details(t, r)["fields"].(map[string]any)
	return f
}

func expectRetryAfter(t *testing.T, r reply) {
	t.Helper()
	expect(t, r, 429, "rate_limited")
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || retry < 1 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if got := details(t, r)["retryAfter"]; got != float64(retry) {
		t.Fatalf("details.retryAfter %v, Retry-After %d", got, retry)
	}
}

// openAPIPath writes a route's path as the document does: a parameter
// ends at "/" or at the ":verb" of an action.
func openAPIPath(ginPath string) string {
	parts := strings.Split(ginPath, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") || strings.HasPrefix(p, "*") {
			name, verb, ok := strings.Cut(p[1:], ":")
			parts[i] = "{" + name + "}"
			if ok {
				parts[i] += ":" + verb
			}
		}
	}
	return strings.Join(parts, "/")
}

// ---- Accounts, projects and uploads, through the API ----

// signedIn is the answer of a sign-in or a refresh; a session's answer
// has its user too.
type signedIn struct {
	AccessToken, RefreshToken string
	User                      struct{ ID, Email string }
}

// user makes a user and returns its API key.
func (a *app) user(email string, admin bool) string {
	a.t.Helper()
	u, err := a.env.Store.CreateUser(context.Background(), email, admin)
	if err != nil {
		a.t.Fatal(err)
	}
	key, _, err := a.env.Store.CreateAPIKey(context.Background(), u.ID, "test")
	if err != nil {
		a.t.Fatal(err)
	}
	return key
}

type photo struct {
	name string
	data []byte
}

func (p photo) sum() string {
	h := sha256.Sum256(p.data)
	return hex.EncodeToString(h[:])
}

func corpus(t testing.TB, names ...string) []photo {
	t.Helper()
	dir := testenv.Corpus(t)
	out := make([]photo, len(names))
	for i, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = photo{name: filepath.Base(n), data: b}
	}
	return out
}

func (a *app) newProject(key string) string {
	a.t.Helper()
	r := a.do("POST", "/v1/projects", key, map[string]any{"title": "Shoot"})
	expect(a.t, r, 201, "")
	return decode[created](a.t, r).ID
}

type upload struct {
	AssetID   string            `json:"assetId"`
	UploadURL string            `json:"uploadUrl"`
	Headers   map[string]string `json:"headers"`
	ExpiresAt time.Time         `json:"expiresAt"`
}

func (a *app) prepare(key, project string, ps []photo) []upload {
	a.t.Helper()
	files := make([]map[string]any, len(ps))
	for i, p := range ps {
		files[i] = map[string]any{"filename": p.name, "byteSize": len(p.data), "clientFileId": fmt.Sprint(i)}
	}
	r := a.do("POST", "/v1/projects/"+project+"/assets:prepareUpload", key, map[string]any{"files": files})
	expect(a.t, r, 200, "")
	return decode[struct{ Uploads []upload }](a.t, r).Uploads
}

// put sends bytes to a signed URL exactly as a browser would: no API key.
func (a *app) put(rawURL string, headers map[string]string, body []byte) reply {
	a.t.Helper()
	return a.putWith(http.DefaultClient, rawURL, headers, body)
}

// putWith is put through client.
func (a *app) putWith(client *http.Client, rawURL string, headers map[string]string, body []byte) reply {
	a.t.Helper()
	req, _ := http.NewRequest("PUT", rawURL, bytes.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: b}
}

func (a *app) finalize(key, project string, ups []upload, sums []string) reply {
	a.t.Helper()
	items := make([]map[string]string, len(ups))
	for i, u := range ups {
		items[i] = map[string]string{"assetId": u.AssetID, "checksumSha256": sums[i]}
	}
	return a.do("POST", "/v1/projects/"+project+"/assets:finalizeUpload", key, map[string]any{"assets": items})
}

// uploadAll prepares, PUTs and finalizes ps, returning the finalize answer.
func (a *app) uploadAll(key, project string, ps []photo) (reply, []upload) {
	a.t.Helper()
	ups := a.prepare(key, project, ps)
	sums := make([]string, len(ps))
	for i, u := range ups {
		expect(a.t, a.put(u.UploadURL, u.Headers, ps[i].data), 201, "")
		sums[i] = ps[i].sum()
	}
	return a.finalize(key, project, ups, sums), ups
}

// processed uploads photos and writes what the worker would have learned
// about them, through the same store calls the worker makes.
func processed(t *testing.T, a *app, key, project string, cameras []string, vectors [][]float32) []uuid.UUID {
	t.Helper()
	names := []string{"photos/wood.jpg", "photos/dune.jpg", "photos/storm.jpg"}[:len(cameras)]
	_, ups := a.uploadAll(key, project, corpus(t, names...))
	ctx := context.Background()
	ids := make([]uuid.UUID, len(ups))
	shot := time.Date(2026, 6, 21, 14, 0, 0, 0, time.UTC)
	for i, u := range ups {
		ids[i] = uuid.MustParse(u.AssetID)
		at := shot.Add(time.Duration(i) * time.Minute)
		if err := a.env.Store.SaveIngest(ctx, store.IngestOutput{AssetID: ids[i], Width: 100, Height: 80, CapturedAt: &at,
			CameraMake: cameras[i], CameraModel: "Model " + cameras[i], EXIF: json.RawMessage(`{}`), Quality: json.RawMessage(`{}`),
			PHash: uint64(i), HashAlgorithm: "test"}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.env.Store.SaveEmbedding(ctx, ids[i], testEmbedModel, vectors[i]); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// failedUpload is two photos of one project, uploaded and finalized, the
// first of whose ingest jobs failed for good.
type failedUpload struct {
	project, batch string
	jobs           []string // the ingest jobs, in upload order
	ups            []upload
}

func (a *app) failedUpload(key string) failedUpload {
	a.t.Helper()
	project := a.newProject(key)
	r, ups := a.uploadAll(key, project, corpus(a.t, "photos/wood.jpg", "photos/dune.jpg"))
	expect(a.t, r, 200, "")
	fin := decode[queued](a.t, r)
	a.env.FailJob(a.t, uuid.MustParse(fin.QueuedJobs[0]), 4, "task_failed")
	return failedUpload{project: project, batch: fin.BatchID, jobs: fin.QueuedJobs, ups: ups}
}

// revoke revokes the API key key.
func (a *app) revoke(key string) {
	a.t.Helper()
	ctx := context.Background()
	p, err := a.env.Store.PrincipalByAPIKey(ctx, key)
	if err != nil {
		a.t.Fatal(err)
	}
	if err := a.env.Store.RevokeAPIKey(ctx, p.KeyID); err != nil {
		a.t.Fatal(err)
	}
}

// mailApp is an app with options o that mails sign-in codes to a test
// SMTP server.
func mailApp(t *testing.T, o options) (*app, <-chan testenv.Mail) {
	t.Helper()
	smtpURL, mails := testenv.SMTP(t)
	vars := map[string]string{"SMTP_URL": smtpURL, "MAIL_FROM": "Lightbox <no-reply@example.org>"}
	maps.Copy(vars, o.env)
	o.env = vars
	e := testenv.New(t)
	return startAppWith(t, e, e.Redis, o), mails
}

// signIn signs email in by the mailed code, as a device would, and
// returns its access and refresh tokens.
func (a *app) signIn(t *testing.T, mails <-chan testenv.Mail, email string, headers ...string) (access, refresh string) {
	t.Helper()
	r := a.do("POST", "/v1/auth/login", "", map[string]any{"email": email}, headers...)
	expect(t, r, 200, "")
	challenge := decode[struct{ ChallengeID string }](t, r).ChallengeID
	r = a.do("POST", "/v1/auth/verify", "", map[string]any{"challengeId": challenge, "code": mailedCode(t, mails, email)}, headers...)
	expect(t, r, 200, "")
	tokens := decode[signedIn](t, r)
	return tokens.AccessToken, tokens.RefreshToken
}

// mailedCode waits for the next sign-in mail and returns its code.
func mailedCode(t *testing.T, mails <-chan testenv.Mail, to string) string {
	t.Helper()
	select {
	case m := <-mails:
		if len(m.To) != 1 || m.To[0] != to {
			t.Fatalf("a mail to %v, want %s", m.To, to)
		}
		code := regexp.MustCompile(`sign-in code is (\d{6})\.`).FindStringSubmatch(m.Data)
		if code == nil {
			t.Fatalf("no code in the mail:\n%s", m.Data)
		}
		return code[1]
	case <-time.After(3 * time.Minute):
		t.Fatal("no sign-in mail arrived")
		return ""
	}
}

// ---- Resources read and made through the API ----

// jobReply is a job as lists show it; admins' lists add its owner.
type jobReply struct {
	ID, ProjectID, Type, Status string
	AssetID, BatchID            *string
	Attempt                     int
	Error, ErrorCode            *string
	OwnerEmail                  string
}

type exportReply struct {
	ID, ProjectID, BatchID, JobID, Preset, Status string
	Settings                                      map[string]any
	Progress                                      float64
	Skipped                                       []map[string]string
	Error                                         *struct{ Code, Message string }
	ByteSize                                      *int64
	CreatedAt, UpdatedAt                          time.Time
	ExpiresAt                                     *time.Time
}

func (a *app) export(key, id string) exportReply {
	a.t.Helper()
	r := a.do("GET", "/v1/exports/"+id, key, nil)
	expect(a.t, r, 200, "")
	return decode[exportReply](a.t, r)
}

func (a *app) newExport(key, project string, body any) exportReply {
	a.t.Helper()
	r := a.do("POST", "/v1/projects/"+project+"/exports", key, body)
	expect(a.t, r, 201, "")
	return decode[exportReply](a.t, r)
}

type batchReply struct {
	Batch struct {
		ID, Status               string
		Total, Completed, Failed int
	}
	Jobs []struct {
		ID, AssetID, Status string
	}
}

func (a *app) batch(key, id string) batchReply {
	a.t.Helper()
	r := a.do("GET", "/v1/batches/"+id, key, nil)
	expect(a.t, r, 200, "")
	return decode[batchReply](a.t, r)
}

// newGallery creates a gallery and returns its answer.
func (a *app) newGallery(key, project string, body map[string]any) map[string]any {
	a.t.Helper()
	r := a.do("POST", "/v1/projects/"+project+"/galleries", key, body)
	expect(a.t, r, 201, "")
	return r.json(a.t)
}

type shareReply struct {
	Title          string
	RequiresAuth   bool
	Token          string
	ExpiresAt      *time.Time
	AllowDownloads bool
	ShowFileNames  bool
	Assets         []struct {
		AssetID       string
		PreviewURL    *string
		Pending       bool
		FavoriteCount int
		CommentsCount int
		Favorited     bool
		OriginalURL   *string
		FileName      *string
		Width, Height *int
	}
}

// viewer sends a request to the public share routes, with a viewer token
// when one is given.
func (a *app) viewer(method, slug, path, token string, body any) reply {
	a.t.Helper()
	return a.do(method, "/v1/share/"+slug+path, token, body)
}

func (a *app) share(slug, token string) shareReply {
	a.t.Helper()
	r := a.viewer("GET", slug, "", token, nil)
	expect(a.t, r, 200, "")
	return decode[shareReply](a.t, r)
}

func (a *app) viewerToken(slug, password string) string {
	a.t.Helper()
	r := a.viewer("POST", slug, "/auth", "", map[string]any{"password": password})
	expect(a.t, r, 200, "")
	return decode[struct{ Token string }](a.t, r).Token
}

// image fetches a signed image URL as a browser would, without a key.
func (a *app) image(url string) image.Image {
	a.t.Helper()
	res, err := http.Get(url)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/jpeg" {
		a.t.Fatalf("GET %s: %d %s", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	img, err := jpeg.Decode(bytes.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	return img
}

// readyPhotos uploads photos and waits, up to minutes, for their previews.
func (a *app) readyPhotos(key, project string, names ...string) []string {
	a.t.Helper()
	_, ups := a.uploadAll(key, project, corpus(a.t, names...))
	waitCount(a.t.(*testing.T), a, "the photos' previews", len(names),
		`SELECT count(*) FROM assets WHERE project_id = $1 AND status IN ('cull', 'search', 'ai')`, project)
	ids := make([]string, len(ups))
	for i, u := range ups {
		ids[i] = u.AssetID
	}
	return ids
}

type ratedAsset struct {
	ID       string
	Keywords []string
	Notes    string
	IPTC     map[string]any
	Flags    map[string]any
	MyRating *struct {
		Rating                    *int
		Picked, Rejected, Starred bool
		Notes                     string
		ColorLabel                *string
	}
}

func (a *app) assetList(key, project, query string) []ratedAsset {
	a.t.Helper()
	r := a.do("GET", "/v1/projects/"+project+"/assets?"+query, key, nil)
	expect(a.t, r, 200, "")
	return decode[pageOf[ratedAsset]](a.t, r).Items
}

func ids(assets []ratedAsset) string {
	var out []string
	for _, a := range assets {
		out = append(out, a.ID)
	}
	return strings.Join(out, ",")
}

// passwordTry is the answer to a password tried (POST /v1/share/{slug}/auth)
// or set (PATCH /v1/galleries/{id}).
type passwordTry struct {
	status int
	code   string
	retry  time.Duration // Retry-After
}

// tryPassword sends pw to the gallery at slug as the client at addr (the
// test's apps trust 127.0.0.1 to name it); safe from any goroutine.
func tryPassword(client *http.Client, base, slug, addr, pw string) (passwordTry, error) {
	body, _ := json.Marshal(map[string]string{"password": pw})
	req, err := http.NewRequest("POST", base+"/v1/share/"+slug+"/auth", bytes.NewReader(body))
	if err != nil {
		return passwordTry{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", addr)
	return sendPassword(client, req)
}

// sendPassword sends a request that sets or tries a password, and reads
// its answer: a 5xx, or a 429 without a Retry-After, is an error.
func sendPassword(client *http.Client, req *http.Request) (passwordTry, error) {
	res, err := client.Do(req)
	if err != nil {
		return passwordTry{}, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var e struct{ Code string }
	json.Unmarshal(b, &e)
	out := passwordTry{status: res.StatusCode, code: e.Code}
	out.retry = retryafter.Parse(res.Header.Get("Retry-After"), time.Now())
	if res.StatusCode >= 500 || (res.StatusCode == 429 && out.retry <= 0) {
		return out, fmt.Errorf("answer %d without a Retry-After: %s", res.StatusCode, b)
	}
	return out, nil
}

// group is a duplicate group as a cluster run makes it, won by members[0].
func group(title string, members ...uuid.UUID) store.NewCluster {
	c := store.NewCluster{Kind: "duplicate_group", Title: title, Winner: members[0], WhyWinner: []string{"sharpest"}}
	for i, id := range members {
		role := "alt"
		if i == 0 {
			role = "winner"
		}
		c.Members = append(c.Members, store.ClusterMember{AssetID: id, Rank: i + 1, Role: role, Signals: json.RawMessage(`{}`)})
	}
	return c
}

// ---- Waiting for a state ----

func (a *app) count(sql string, args ...any) int {
	a.t.Helper()
	var n int
	if err := a.env.DB.Get(&n, sql, args...); err != nil {
		a.t.Fatal(err)
	}
	return n
}

// waitCount waits, up to ten minutes, for query to count want. A photo's
// gallery render waits for its ingest through retries 10 s, 1 min and
// 5 min apart (tasks.TypeGallery): on a busy machine an ingest that takes
// over a minute puts the render's end six minutes out.
func waitCount(t testing.TB, a *app, what string, want int, query string, args ...any) {
	t.Helper()
	testenv.Eventually(t, what, 10*time.Minute, func() bool { return a.count(query, args...) == want })
}

// waitBatch waits for batch id to reach status want, for minutes at most,
// and returns the API's answer then; a batch that fails instead ends the
// test at once. It polls the row, not the API, whose rate limit a long
// wait would reach.
func (a *app) waitBatch(key, id, want string) batchReply {
	a.t.Helper()
	waitCount(a.t, a, "batch "+id+" "+want+" or failed", 1, `SELECT count(*) FROM batches WHERE id = $1 AND status IN ($2, 'failed')`, id, want)
	b := a.batch(key, id)
	if b.Batch.Status != want {
		a.t.Fatalf("batch %+v, want %s", b, want)
	}
	return b
}

// ---- The worker, the queue and other processes ----

func inspector(t testing.TB, env *testenv.Env) *asynq.Inspector {
	opt, err := asynq.ParseRedisURI(env.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	in := asynq.NewInspector(opt)
	t.Cleanup(func() { in.Close() })
	return in
}

// startWorker runs the real worker on the app's Postgres, Redis and blob
// folder until the test ends.
func (a *app) startWorker() *worker.Worker {
	a.t.Helper()
	return a.startWorkerOn(a.blobs)
}

// startWorkerOn is startWorker with the worker's blobs in blobs.
func (a *app) startWorkerOn(blobs blob.Store) *worker.Worker {
	a.t.Helper()
	w := a.newWorker(blobs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	a.t.Cleanup(func() {
		cancel()
		// A task still inside libvips when the test ends is handed back, as
		// at any stop; the test's assertions are behind it.
		switch err := <-done; {
		case errors.Is(err, worker.ErrHandlersRunning):
			a.t.Logf("worker: %v", err)
		case err != nil:
			a.t.Errorf("worker: %v", err)
		}
	})
	return w
}

// newWorker is the real worker on the app's Postgres and Redis, its blobs
// in blobs, not running: its Handler runs tasks one at a time.
func (a *app) newWorker(blobs blob.Store) *worker.Worker {
	a.t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine, err := imaging.New(a.cfg.ImagingEngine, imaging.Config{MaxPixels: a.cfg.MaxPixels})
	if err != nil {
		a.t.Fatal(err)
	}
	ledger, err := chain.OpenFileLedger(filepath.Join(a.t.TempDir(), "ledger.jsonl"))
	if err != nil {
		a.t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(nil)
	w, err := worker.New(worker.Deps{Config: a.cfg, Store: a.env.Store, Blobs: blobs, Redis: a.env.Redis, Logger: quiet,
		Engine: engine, Embedder: embedding.Builtin{}, Flusher: &chain.Flusher{Store: a.env.Store, Key: key, Ledger: ledger, Logger: quiet}})
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { ledger.Close() })
	return w
}

type serverProcess struct {
	addr string
	pid  int
}

// startServerProcess runs cmd/server, built without the race detector, on
// the test's database and Redis until the test ends: what is measured
// through it is the server, not an instrumented test binary.
func startServerProcess(b testing.TB, env *testenv.Env, extra map[string]string) serverProcess {
	b.Helper()
	bin := testenv.Binary(b, "lightbox/cmd/server")
	dir := b.TempDir()
	_, chainKey, _ := ed25519.GenerateKey(nil)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(chainKey)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+env.DSN, "REDIS_URL="+env.RedisURL, "HTTP_ADDR="+addr,
		"PUBLIC_URL=http://"+addr, "DATA_DIR="+filepath.Join(dir, "data"), "UPLOAD_SECRET="+testUploadSecret, "CHAIN_KEY="+base64.StdEncoding.EncodeToString(pkcs8), "LOG_LEVEL=warn")
	for k, v := range extra {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if b.Failed() {
			out, _ := os.ReadFile(logs.Name())
			b.Logf("server log:\n%s", out)
		}
	})
	testenv.Eventually(b, "the server to become ready", 3*time.Minute, func() bool {
		res, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return serverProcess{addr: addr, pid: cmd.Process.Pid}
}

// ---- Event streams ----

// sseEvent is one event as a client reads it off the wire.
type sseEvent struct {
	id, name, data string
}

// sseClient reads a stream the way a browser's EventSource does.
type sseClient struct {
	t      testing.TB
	res    *http.Response
	events chan sseEvent
	lines  chan string
	cancel context.CancelFunc
}

func (a *app) openStream(path string, headers ...string) *sseClient {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", a.url+path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	c := &sseClient{t: a.t, res: res, events: make(chan sseEvent, 100), lines: make(chan string, 100), cancel: cancel}
	a.t.Cleanup(func() { cancel(); res.Body.Close() })
	if res.StatusCode != 200 {
		return c
	}
	go func() {
		defer close(c.events)
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			select {
			case c.lines <- line:
			default:
			}
			switch {
			case line == "":
				if ev.name != "" {
					c.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return c
}

func (c *sseClient) next() sseEvent {
	c.t.Helper()
	select {
	case ev, ok := <-c.events:
		if !ok {
			c.t.Fatal("stream ended")
		}
		return ev
	case <-time.After(2 * time.Minute): // only bounds a hang
		c.t.Fatal("no event within 2 minutes")
	}
	return sseEvent{}
}

func publish(t testing.TB, env *testenv.Env, project, batch uuid.UUID, name events.Name, data any) events.Event {
	t.Helper()
	ev, err := events.New(name, project, batch, data)
	if err != nil {
		t.Fatal(err)
	}
	ev, err = events.NewPublisher(env.Redis, events.PublisherOptions{}).Publish(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}
