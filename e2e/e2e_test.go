package e2e_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/chain"
	"lightbox/cmd/boot"
	"lightbox/config"
	"lightbox/server"
	"lightbox/testsupport/testenv"
	"lightbox/worker"
)

// artifacts is where screenshots and the stack's log go, from the
// repository root.
const artifacts = "../artifacts/e2e"

// patience bounds every wait on a state (a page's text, a row, an API
// answer) and every browser action. It only catches a hang: `make test`
// runs these tests beside the rest of the suite on two busy cores, where
// the pipeline can take minutes to get through 50 photos.
const patience = 10 * time.Minute

// pipelinePatience bounds the wait for a whole upload to become searchable.
const pipelinePatience = 10 * time.Minute

// stack is a server and a worker on loopback, wired as cmd/server and
// cmd/worker wire them, on the test's own Postgres and Redis databases.
type stack struct {
	t       testing.TB
	env     *testenv.Env
	url     string
	dataDir string
	signer  string // the chain's signing key, public half in hex
}

func startStack(t testing.TB, logTo *os.File, extra map[string]string) *stack {
	t.Helper()
	env := testenv.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	dataDir := t.TempDir()
	vars := map[string]string{
		"DATABASE_URL": env.DSN, "REDIS_URL": env.RedisURL, "DATA_DIR": dataDir,
		"HTTP_ADDR": ln.Addr().String(), "PUBLIC_URL": url, "UPLOAD_SECRET": "e2e-secret-0123456789abcdef0123456789",
		// net/http's Shutdown waits up to 5 s for a connection that never
		// sent a request (a client's spare dial, a browser's preconnect)
		// before it counts it idle: a timeout of 5 s then fails the test
		// at random. 15 s leaves it room.
		"CLUSTER_DELAY": "1s", "WORKER_CONCURRENCY": "2", "SHUTDOWN_TIMEOUT": "15s",
	}
	for k, v := range extra {
		vars[k] = v
	}
	cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(logTo, nil))
	rdb, queueOpt, err := boot.Redis(cfg)
	if err != nil {
		t.Fatal(err)
	}
	queue := asynq.NewClient(queueOpt)
	inspector := asynq.NewInspector(queueOpt)
	blobs, signer, err := boot.Blobs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := boot.Engine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	embedder, err := boot.Embedder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := boot.Ledger(cfg)
	if err != nil {
		t.Fatal(err)
	}
	finder, err := boot.Faces(cfg) // nil without FACES_URL
	if err != nil {
		t.Fatal(err)
	}
	pub, key, _ := ed25519.GenerateKey(nil)

	srv := server.New(server.Deps{
		Config: cfg, Store: env.Store, Redis: rdb, Queue: queue, Inspector: inspector, Logger: log,
		Blobs: blobs, Signer: signer,
		ChainKeys: chain.Keys{Current: pub}, EmbedModel: embedder.Model(),
	})
	w, err := worker.New(worker.Deps{
		Config: cfg, Store: env.Store, Blobs: blobs, Redis: rdb, Logger: log, Engine: engine, Embedder: embedder,
		Faces: finder, FacesRatePerMinute: cfg.FacesRatePerMin,
		Flusher: &chain.Flusher{Store: env.Store, Key: key, Ledger: ledger, Logger: log},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srvDone, workerDone := make(chan error, 1), make(chan error, 1)
	go func() { srvDone <- srv.Serve(ctx, ln) }()
	go func() { workerDone <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-srvDone; err != nil {
			t.Errorf("server: %v", err)
		}
		// A task still inside libvips when the test ends is handed back, as
		// at any stop; the test's assertions are behind it.
		switch err := <-workerDone; {
		case errors.Is(err, worker.ErrHandlersRunning):
			t.Logf("worker: %v", err)
		case err != nil:
			t.Errorf("worker: %v", err)
		}
		queue.Close()
		inspector.Close()
		rdb.Close()
	})
	return &stack{t: t, env: env, url: url, dataDir: dataDir, signer: hex.EncodeToString(pub)}
}

func (s *stack) user(email string, admin bool) string {
	s.t.Helper()
	u, err := s.env.Store.CreateUser(context.Background(), email, admin)
	if err != nil {
		s.t.Fatal(err)
	}
	key, _, err := s.env.Store.CreateAPIKey(context.Background(), u.ID, "e2e")
	if err != nil {
		s.t.Fatal(err)
	}
	return key
}

// waitFor polls the database (or anything) until cond holds.
func (s *stack) waitFor(what string, cond func() bool) {
	s.t.Helper()
	testenv.Eventually(s.t, what, patience, cond)
}

// waitReady waits until the API counts n of the project's assets
// searchable. The browser tests wait for this before they wait for the
// page to say so: the pipeline's pace depends on how busy the machine is,
// the page's only on the server's answer. It asks once a second, well
// inside the API budget that the page shares.
func (s *stack) waitReady(key, project string, n int) {
	s.t.Helper()
	var st struct {
		Ready  int `json:"ready"`
		Failed int `json:"failed"`
	}
	testenv.EventuallyEvery(s.t, fmt.Sprintf("the API to count %d assets searchable", n), pipelinePatience, time.Second, func() bool {
		s.apiGet(key, "/v1/projects/"+project+"/stats", &st)
		if st.Failed > 0 {
			s.t.Fatalf("%d assets failed on the way to searchable: %+v", st.Failed, st)
		}
		return st.Ready == n
	})
}

func (s *stack) count(query string, args ...any) int {
	s.t.Helper()
	var n int
	if err := s.env.DB.Get(&n, query, args...); err != nil {
		s.t.Fatal(err)
	}
	return n
}

// asset finds the one asset uploaded under filename.
func (s *stack) asset(filename string) (id uuid.UUID, blobKey string) {
	s.t.Helper()
	row := struct {
		ID  uuid.UUID `db:"id"`
		Key string    `db:"blob_key"`
	}{}
	if err := s.env.DB.Get(&row, `SELECT id, blob_key FROM assets WHERE filename = $1 AND status <> 'pending_upload'`, filename); err != nil {
		s.t.Fatalf("asset %s: %v", filename, err)
	}
	return row.ID, row.Key
}

func (s *stack) ingestJob(asset uuid.UUID) string {
	s.t.Helper()
	var id string
	if err := s.env.DB.Get(&id, `SELECT id FROM jobs WHERE asset_id = $1 AND type = 'asset:ingest'`, asset); err != nil {
		s.t.Fatal(err)
	}
	return id
}

// apiGet reads an API answer as a user of the API would.
func (s *stack) apiGet(key, path string, into any) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		s.t.Fatalf("GET %s: %d", path, res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(into); err != nil {
		s.t.Fatal(err)
	}
}

// browser is one headless Chromium tab.
type browser struct {
	t   testing.TB
	ctx context.Context
}

// chromium finds the browser. Its absence fails the test: `make test`
// installs it, and a skipped browser test would hide a broken page.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("Chromium is not installed, and the browser tests need it: install it with `apt-get install -y chromium` " +
		"(`make test` does so when run as root), or put chromium on PATH")
	return ""
}

// chrome is the package's one Chromium, started by the first test that
// needs a browser and stopped by TestMain: a start costs seconds of a busy
// machine. Each test has a browser context of its own in it (cookies,
// storage and cache of its own, as a fresh profile has), closed when the
// test ends.
var chrome struct {
	once sync.Once
	ctx  context.Context // the browser's first tab
	stop func()
	err  error
}

// startChromium starts the package's Chromium at path, once.
func startChromium(path string) (context.Context, error) {
	chrome.once.Do(func() {
		dataDir, err := os.MkdirTemp("", "lightbox-e2e-chromium-")
		if err != nil {
			chrome.err = err
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path),
			chromedp.UserDataDir(dataDir),
			chromedp.Headless,
			chromedp.NoSandbox, // tests run as root
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			// Each test's page is one of several: none may be slowed
			// as a page in the background is.
			chromedp.Flag("disable-background-timer-throttling", true),
			chromedp.Flag("disable-backgrounding-occluded-windows", true),
			chromedp.Flag("disable-renderer-backgrounding", true),
			chromedp.WindowSize(1280, 900),
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		chrome.ctx = ctx
		chrome.stop = func() {
			cancel()
			cancelAlloc()
			os.RemoveAll(dataDir)
		}
		// The first action starts the browser, without a timeout: one
		// would stop the whole browser when it passed.
		chrome.err = chromedp.Do(ctx)
	})
	return chrome.ctx, chrome.err
}

// newBrowser opens a tab in a browser context of t's own.
func newBrowser(t testing.TB, path string) *browser {
	t.Helper()
	parent, err := startChromium(path)
	if err != nil {
		t.Fatalf("start Chromium at %s: %v", path, err)
	}
	ctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// Only one page of a browser has the focus, and the keyboard needs
	// it: each test's page behaves as if it had it.
	err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return err
	}))
	if err != nil {
		t.Fatalf("open a tab in Chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx}
}

// allowClipboard lets the pages of origin write and read the clipboard,
// as a person who clicks "Copy" and pastes would.
func (b *browser) allowClipboard(origin string) {
	b.t.Helper()
	c := chromedp.FromContext(b.ctx)
	ctx, cancel := context.WithTimeout(b.ctx, patience)
	defer cancel()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		_, err := cdp.Call(ctx, c.Browser, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted,
			Origin: origin, BrowserContextID: c.BrowserContextID})
		if err != nil {
			b.fail("allow "+name, err)
		}
	}
}

// run does actions, failing the test (with a screenshot) when they have
// not succeeded within patience. The deadline is on a context derived from
// the browser's, so it ends the actions, not the browser.
func (b *browser) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, patience)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail(what, err)
	}
}

// waitJS polls a JavaScript expression until it is true. Poll stops by
// itself after 30 s unless told otherwise, far sooner than patience; its own
// timeout is off, so run's deadline is the only one.
func (b *browser) waitJS(what string, expr string) {
	b.t.Helper()
	b.run(what, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(250*time.Millisecond), chromedp.WithPollingTimeout(0))(ctx, t)
		return err
	}))
}

// eval evaluates a JavaScript expression, waiting for it when it is a promise.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, patience)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("evaluate "+expr, err)
	}
	return v
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	name := "failed-" + strings.NewReplacer(" ", "-", "/", "-").Replace(what)
	b.shot(name)
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	b.t.Fatalf("%s: %v\n(screenshot %s/%s.png) the page says:\n%s", what, err, artifacts, name, text)
}

// shot saves a full-page screenshot under artifacts/e2e.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(artifacts, name+".png"), png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}

// text is an element's text as rendered, or its whole text content when
// it is not visible.
// viewShot saves what the window shows, for pages too long to see whole.
func (b *browser) viewShot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err == nil {
		err = os.WriteFile(filepath.Join(artifacts, name+".png"), png, 0o644)
	}
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}

// project is the id of the project the page shows.
func (b *browser) project() string {
	b.t.Helper()
	hash := eval[string](b, `location.hash`)
	project := strings.Split(strings.TrimPrefix(hash, "#/projects/"), "/")[0]
	if _, err := uuid.Parse(project); err != nil {
		b.t.Fatalf("the page went to %q, not a project", hash)
	}
	return project
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return eval[string](b, `document.querySelector(`+strconv.Quote(sel)+`).textContent`)
}

// distinctPhotos writes n distinct real photos to a folder: the corpus's
// photos in turn, each with random bytes after the JPEG's end, so every
// file has its own checksum and still decodes.
func distinctPhotos(t *testing.T, n int) []string {
	t.Helper()
	dir := filepath.Join(testenv.Corpus(t), "photos")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	paths := make([]string, n)
	for i := range paths {
		e := entries[i%len(entries)]
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		tag := make([]byte, 16)
		rand.Read(tag)
		paths[i] = filepath.Join(out, fmt.Sprintf("%02d-%s", i+1, e.Name()))
		if err := os.WriteFile(paths[i], append(data, hex.EncodeToString(tag)...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// TestUploadReviewAndRetryInABrowser is the whole path a person takes: sign
// in, create a project, upload 50 photos and watch them become searchable,
// open one, then recover failed jobs from the admin page and from Asynqmon.
func TestUploadReviewAndRetryInABrowser(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(artifacts, "stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	s := startStack(t, logFile, nil)
	key := s.user("admin@example.org", true)
	photos := distinctPhotos(t, 52)
	corrupt := filepath.Join(testenv.Corpus(t), "bad", "truncated-progressive.jpg")
	b := newBrowser(t, chrome)

	b.run("open the app", chromedp.Navigate(s.url), chromedp.WaitVisible(chromedp.CSS("#api-key")))
	b.shot("01-sign-in")
	// By keyboard: Enter submits both forms.
	b.run("sign in",
		chromedp.SendKeys(chromedp.CSS("#api-key"), key+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("#new-title")))
	b.run("create a project",
		chromedp.SendKeys(chromedp.CSS("#new-title"), "Harbour wedding"+kb.Enter),
		chromedp.WaitReady(chromedp.CSS("#file-input")))
	project := b.project()

	// 50 photos, straight to storage, then through the pipeline.
	start := time.Now()
	b.run("choose 50 photos", chromedp.SetUploadFiles(chromedp.CSS("#file-input"), photos[:50]))
	b.waitJS("uploads under way", `/^Uploading [1-9]/.test(document.querySelector('#phase-uploading').textContent)`)
	b.shot("02-uploading")
	s.waitReady(key, project, 50)
	b.waitJS("the page to say Searchable 50/50",
		`document.querySelector('#phase-searchable').textContent === 'Searchable 50/50'`)
	t.Logf("50 photos searchable %.1f s after they were chosen", time.Since(start).Seconds())
	for _, phase := range []string{"uploading", "processing"} {
		if got := b.text("#phase-" + phase); !strings.HasSuffix(got, " 50/50") {
			t.Errorf("phase %s reads %q, want 50/50", phase, got)
		}
	}
	if n := s.count(`SELECT count(*) FROM assets WHERE status IN ('search', 'ai')`); n != 50 {
		t.Errorf("%d assets searchable in Postgres, want 50", n)
	}
	b.shot("03-searchable")
	// The list is virtual: fewer rows in the DOM than files, and
	// scrolling brings the last ones in.
	if n := eval[int](b, `document.querySelectorAll('#file-list .frow').length`); n >= 50 {
		t.Errorf("the file list holds %d row elements for 50 files; it should hold only those in view", n)
	}
	eval[bool](b, `(document.querySelector('#file-list').scrollTop = 1e6, true)`)
	b.waitJS("the last files after scrolling the list",
		`[...document.querySelectorAll('#file-list .frow:not([hidden])')].some(r => r.textContent.startsWith('50-'))`)

	b.run("open the photos", chromedp.Click(chromedp.CSS("#tab-photos")))
	b.waitJS("thumbnails to load",
		`[...document.querySelectorAll('#grid img[data-loaded]')].filter(i => i.complete && i.naturalWidth > 0).length >= 12`)
	b.shot("04-photos")
	b.run("open a photo's details", chromedp.Click(chromedp.CSS(`#grid li:first-child`)), chromedp.KeyEvent("i"))
	b.waitJS("the photo's details",
		`!!document.querySelector('#details[open] #exif') && !!document.querySelector('#details img.preview')?.naturalWidth`)
	details := b.text("#details")
	for _, want := range []string{"SHA-256", "Files", "thumbnail", "preview", "asset:ingest", "Attestation"} {
		if !strings.Contains(details, want) {
			t.Errorf("the details do not mention %q:\n%s", want, details)
		}
	}
	b.viewShot("05-details")
	eval[bool](b, `(document.querySelector('#details').scrollTop = 1e6) > 0`)
	b.viewShot("05-details-jobs")
	b.run("close the details", chromedp.Click(chromedp.CSS("#details .close")))

	b.run("open the groups", chromedp.Click(chromedp.CSS("#tab-groups")))
	b.waitJS("duplicate groups with a best shot",
		`!!document.querySelector('.cluster[data-kind="duplicate_group"] li.winner') && !!document.querySelector('.cluster .why')`)
	b.viewShot("06-groups")
	eval[bool](b, `(document.querySelector('#kind-duplicate_group').scrollIntoView(), true)`)
	b.viewShot("06-groups-duplicates")

	// Failures: pause the default queue so two originals can go missing
	// before their ingest runs, beside a corrupt file.
	b.run("open the admin page", chromedp.Navigate(s.url+"/admin"),
		chromedp.WaitVisible(chromedp.CSS(`button[data-queue="default"]`)))
	b.run("pause the default queue", chromedp.Click(chromedp.CSS(`button[data-queue="default"]`)))
	b.waitJS("the queue to show paused",
		`document.querySelector('button[data-queue="default"]').textContent === 'Resume'`)
	b.run("go back to the project", chromedp.Navigate(s.url+"/#/projects/"+project+"/upload"),
		chromedp.WaitReady(chromedp.CSS("#file-input")))
	b.run("choose a corrupt file and two photos",
		chromedp.SetUploadFiles(chromedp.CSS("#file-input"), []string{corrupt, photos[50], photos[51]}))
	s.waitFor("three finalized assets waiting in the paused queue", func() bool {
		return s.count(`SELECT count(*) FROM assets WHERE status = 'uploaded'`) == 3
	})
	hidden := map[string]uuid.UUID{}
	for _, p := range photos[50:] {
		id, key := s.asset(filepath.Base(p))
		hidden[filepath.Base(p)] = id
		blobPath := filepath.Join(s.dataDir, "blobs", key)
		if err := os.Rename(blobPath, blobPath+".away"); err != nil {
			t.Fatal(err)
		}
	}
	b.run("open the admin page", chromedp.Navigate(s.url+"/admin"),
		chromedp.WaitVisible(chromedp.CSS(`button[data-queue="default"]`)))
	b.run("resume the default queue", chromedp.Click(chromedp.CSS(`button[data-queue="default"]`)))
	b.waitJS("three failed jobs on the admin page",
		`document.querySelectorAll('#failed-jobs button[data-action="retry"]').length === 3`)
	if got := b.text("#failed-jobs"); !strings.Contains(got, "corrupt_image") || strings.Count(got, "original_missing") != 2 {
		t.Errorf("the failed jobs do not show corrupt_image once and original_missing twice:\n%s", got)
	}
	b.shot("07-admin-failed-jobs")
	b.run("verify the chain", chromedp.Click(chromedp.CSS("#verify")))
	b.waitJS("the verify's outcome", `document.querySelector('#chain').textContent.includes('✓ intact')`)
	if got := b.text("#chain"); !strings.Contains(got, "Signing key"+s.signer) || !strings.Contains(got, "Retired keysnone") {
		t.Errorf("the chain panel does not name the signing key %s and no retired one:\n%s", s.signer, got)
	}

	// The originals come back; one job is retried from the admin page.
	for name, id := range hidden {
		key := ""
		s.env.DB.Get(&key, `SELECT blob_key FROM assets WHERE id = $1`, id)
		p := filepath.Join(s.dataDir, "blobs", key)
		if err := os.Rename(p+".away", p); err != nil {
			t.Fatalf("restore %s: %v", name, err)
		}
	}
	first, second := hidden[filepath.Base(photos[50])], hidden[filepath.Base(photos[51])]
	firstJob := s.ingestJob(first)
	b.run("retry a job from the admin page",
		chromedp.Click(chromedp.CSS(`button[data-job="`+firstJob+`"][data-action="retry"]`)))
	s.waitFor("the retried photo to become searchable", func() bool {
		return s.count(`SELECT count(*) FROM assets WHERE id = $1 AND status IN ('search', 'ai')`, first) == 1
	})
	b.waitJS("the retried job to leave the failed list",
		`!document.querySelector('button[data-job="`+firstJob+`"]')`)

	// Asynqmon: the queues, then Run on the other archived task.
	b.run("open Asynqmon", chromedp.Navigate(s.url+"/admin/queues/"),
		chromedp.WaitVisible(chromedp.Search(`//td[normalize-space()="default"] | //a[normalize-space()="default"]`)))
	b.shot("08-asynqmon-queues")
	b.run("open the archived tasks", chromedp.Navigate(s.url+"/admin/queues/queues/default?status=archived"))
	b.waitJS("the archived task in Asynqmon", `(() => {
		const row = [...document.querySelectorAll('tbody tr')].find(r => r.textContent.includes('`+second.String()+`'));
		if (row) row.id = 'e2e-task';
		return !!row;
	})()`)
	b.shot("09-asynqmon-archived")
	b.run("show the task's actions", chromedp.Click(chromedp.CSS(`#e2e-task td:last-child button`)))
	b.run("press Run",
		chromedp.WaitVisible(chromedp.CSS(`#e2e-task td:last-child button:nth-of-type(2)`)),
		chromedp.Click(chromedp.CSS(`#e2e-task td:last-child button:nth-of-type(2)`)))
	s.waitFor("the job run from Asynqmon to be done in the API", func() bool {
		var j struct {
			Status  string `json:"status"`
			Attempt int    `json:"attempt"`
		}
		var jobs struct {
			Items []json.RawMessage `json:"items"`
		}
		s.apiGet(key, "/v1/assets/"+second.String()+"/jobs", &jobs)
		for _, raw := range jobs.Items {
			if bytes.Contains(raw, []byte(`"asset:ingest"`)) {
				json.Unmarshal(raw, &j)
			}
		}
		return j.Status == "done"
	})

	// The project shows the outcome: 52 searchable, the corrupt file failed
	// with its reason and a retry button.
	b.run("go back to the project", chromedp.Navigate(s.url+"/#/projects/"+project+"/upload"),
		chromedp.WaitReady(chromedp.CSS("#file-list")))
	b.waitJS("the page to say Searchable 52/53",
		`document.querySelector('#phase-searchable').textContent === 'Searchable 52/53'`)
	// The counts are whole before the list is; the retry waits for the list.
	b.waitJS("the file list to load", `!document.querySelector('#retry-all').disabled`)
	b.run("show the failed files", chromedp.Click(chromedp.CSS(`button[data-filter="failed"]`)))
	b.waitJS("the corrupt file's reason", `(() => {
		const rows = [...document.querySelectorAll('#file-list .frow:not([hidden])')];
		return rows.length === 1 && rows[0].textContent.includes('corrupt_image') && !rows[0].querySelector('.fretry').hidden;
	})()`)
	b.shot("10-failed-file")

	// "Retry all failed" runs the corrupt file's job again; it fails again,
	// for the same reason.
	corruptID, _ := s.asset("truncated-progressive.jpg")
	var before time.Time
	s.env.DB.Get(&before, `SELECT updated_at FROM jobs WHERE asset_id = $1`, corruptID)
	b.run("retry all failed", chromedp.Click(chromedp.CSS("#retry-all")))
	s.waitFor("the corrupt file's job to run again", func() bool {
		return s.count(`SELECT count(*) FROM jobs WHERE asset_id = $1 AND status = 'failed' AND updated_at > $2`, corruptID, before) == 1
	})
	b.waitJS("the file to show failed again", `(() => {
		const rows = [...document.querySelectorAll('#file-list .frow:not([hidden])')];
		return rows.length === 1 && rows[0].textContent.includes('corrupt_image');
	})()`)

	// The same page at phone width.
	b.run("narrow the window", chromedp.EmulateViewport(390, 844))
	b.shot("11-phone")

	b.run("sign out", chromedp.Click(chromedp.CSS("#sign-out")), chromedp.WaitVisible(chromedp.CSS("#api-key")))
	if ok := eval[bool](b, `fetch('/v1/session').then(r => r.status === 401)`); !ok {
		t.Error("the session still works after signing out")
	}
}

// signIn opens url and signs in there with key.
func (b *browser) signIn(url, key string) {
	b.run("sign in", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#api-key")),
		chromedp.SendKeys(chromedp.CSS("#api-key"), key+kb.Enter))
}

// newProject signs in at url with key and creates a project titled title,
// whose id it returns.
func (b *browser) newProject(url, key, title string) string {
	b.run("sign in and create a project", chromedp.Navigate(url),
		chromedp.SendKeys(chromedp.CSS("#api-key"), key+kb.Enter),
		chromedp.SendKeys(chromedp.CSS("#new-title"), title+kb.Enter),
		chromedp.WaitReady(chromedp.CSS("#file-input")))
	return b.project()
}

// call sends one API request with a key and decodes a JSON answer.
func (s *stack) call(method, path, key string, body any, into any) int {
	s.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	if into != nil {
		json.NewDecoder(res.Body).Decode(into)
	}
	return res.StatusCode
}

// preparedUpload is where prepareUpload says to PUT one file.
type preparedUpload struct {
	AssetID   string            `json:"assetId"`
	UploadURL string            `json:"uploadUrl"`
	Headers   map[string]string `json:"headers"`
}

// prepare asks where to PUT files.
func (s *stack) prepare(key, project string, files []map[string]any) []preparedUpload {
	s.t.Helper()
	var prep struct {
		Uploads []preparedUpload `json:"uploads"`
	}
	if code := s.call("POST", "/v1/projects/"+project+"/assets:prepareUpload", key, map[string]any{"files": files}, &prep); code != 200 {
		s.t.Fatalf("prepare: %d", code)
	}
	return prep.Uploads
}

// upload sends one file through prepare, PUT and finalize, as a client does.
func (s *stack) upload(key, project, path string) (asset, batch string) {
	s.t.Helper()
	assets := s.put(key, project, path)
	return assets[0]["assetId"].(string), s.finalize(key, project, assets)
}

// put prepares files and PUTs each, and returns what finalize takes: each
// file's asset and SHA-256.
func (s *stack) put(key, project string, paths ...string) []map[string]any {
	s.t.Helper()
	datas := make([][]byte, len(paths))
	files := make([]map[string]any, len(paths))
	for i, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			s.t.Fatal(err)
		}
		datas[i], files[i] = data, map[string]any{"filename": filepath.Base(path), "byteSize": len(data)}
	}
	assets := make([]map[string]any, len(paths))
	for i, u := range s.prepare(key, project, files) {
		req, _ := http.NewRequest(http.MethodPut, u.UploadURL, bytes.NewReader(datas[i]))
		for k, v := range u.Headers {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != http.StatusCreated {
			s.t.Fatalf("PUT: %v %v", res, err)
		}
		res.Body.Close()
		sum := sha256.Sum256(datas[i])
		assets[i] = map[string]any{"assetId": u.AssetID, "checksumSha256": hex.EncodeToString(sum[:])}
	}
	return assets
}

// finalize finalizes what put sent, as one batch, and returns its id.
func (s *stack) finalize(key, project string, assets []map[string]any) string {
	s.t.Helper()
	var fin struct {
		BatchID string `json:"batchId"`
	}
	if code := s.call("POST", "/v1/projects/"+project+"/assets:finalizeUpload", key, map[string]any{"assets": assets}, &fin); code != 200 {
		s.t.Fatalf("finalize: %d", code)
	}
	return fin.BatchID
}

type apiJob struct {
	ID            string    `json:"id"`
	Status        string    `json:"status"`
	Attempt       int       `json:"attempt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	OwnerEmail    string    `json:"ownerEmail"`
	AssetFilename *string   `json:"assetFilename"`
	TaskID        string    `json:"taskId"`
	ErrorCode     *string   `json:"errorCode"`
}

func (s *stack) failedJobs(key string) []apiJob {
	s.t.Helper()
	var page struct {
		Items []apiJob `json:"items"`
	}
	if code := s.call("GET", "/v1/admin/jobs?status=failed", key, nil, &page); code != 200 {
		s.t.Fatalf("admin jobs: %d", code)
	}
	return page.Items
}

// TestAdminAPI covers what the admin page relies on beyond the browser
// test: who may use it, retrying a whole batch, and deleting a failed job.
func TestAdminAPI(t *testing.T) {
	t.Parallel()
	logFile, err := os.Create(filepath.Join(t.TempDir(), "stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	s := startStack(t, logFile, nil)
	admin := s.user("root@example.org", true)
	ana := s.user("ana@example.org", false)

	if code := s.call("GET", "/v1/admin/jobs", ana, nil, nil); code != http.StatusForbidden {
		t.Errorf("a user lists every job: %d, want 403", code)
	}
	if code := s.call("GET", "/admin/queues/api/queues", ana, nil, nil); code != http.StatusForbidden {
		t.Errorf("a user reaches Asynqmon's API: %d, want 403", code)
	}
	req, _ := http.NewRequest(http.MethodGet, s.url+"/admin/queues/", nil)
	req.Header.Set("Accept", "text/html")
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/admin" {
		t.Errorf("a browser without a session gets %d %q, want a redirect to the sign-in on /admin", res.StatusCode, res.Header.Get("Location"))
	}
	if code := s.call("POST", "/v1/admin/queues/nope/pause", admin, nil, nil); code != http.StatusNotFound {
		t.Errorf("pausing an unknown queue: %d, want 404", code)
	}

	var p struct {
		ID string `json:"id"`
	}
	s.call("POST", "/v1/projects", ana, map[string]any{"title": "Broken"}, &p)
	asset, batch := s.upload(ana, p.ID, filepath.Join(testenv.Corpus(t), "bad", "truncated-progressive.jpg"))
	var jobs []apiJob
	s.waitFor("the corrupt file's job to fail", func() bool {
		jobs = s.failedJobs(admin)
		return len(jobs) == 1
	})
	j := jobs[0]
	if j.OwnerEmail != "ana@example.org" || j.AssetFilename == nil || *j.AssetFilename != "truncated-progressive.jpg" ||
		j.ErrorCode == nil || *j.ErrorCode != "corrupt_image" || j.TaskID != "ingest:"+asset {
		t.Errorf("the failed job reads %+v", j)
	}

	var retried struct {
		RetriedJobs []string `json:"retriedJobs"`
	}
	if code := s.call("POST", "/v1/admin/batches/"+batch+"/retry", admin, nil, &retried); code != http.StatusAccepted ||
		len(retried.RetriedJobs) != 1 || retried.RetriedJobs[0] != j.ID {
		t.Fatalf("retry the batch: %d %+v", code, retried)
	}
	s.waitFor("the retried job to run and fail again", func() bool {
		jobs = s.failedJobs(admin)
		return len(jobs) == 1 && jobs[0].UpdatedAt.After(j.UpdatedAt)
	})

	var deleted apiJob
	if code := s.call("DELETE", "/v1/admin/jobs/"+j.ID, admin, nil, &deleted); code != http.StatusOK || deleted.Status != "canceled" {
		t.Fatalf("delete: %d %+v", code, deleted)
	}
	if jobs := s.failedJobs(admin); len(jobs) != 0 {
		t.Errorf("a deleted job is still listed as failed: %+v", jobs)
	}
	opt, _ := asynq.ParseRedisURI(s.env.RedisURL)
	in := asynq.NewInspector(opt)
	defer in.Close()
	if _, err := in.GetTaskInfo("default", "ingest:"+asset); err == nil {
		t.Error("the deleted job's task is still in the queue")
	}
	var e struct {
		Code string `json:"code"`
	}
	if code := s.call("DELETE", "/v1/admin/jobs/"+j.ID, admin, nil, &e); code != http.StatusConflict || e.Code != "job_not_failed" {
		t.Errorf("deleting twice: %d %s, want 409 job_not_failed", code, e.Code)
	}
	var b struct {
		Batch struct {
			Status string `json:"status"`
		} `json:"batch"`
	}
	s.call("GET", "/v1/batches/"+batch, ana, nil, &b)
	if b.Batch.Status != "partial" && b.Batch.Status != "failed" {
		t.Errorf("the batch of a deleted job is %q", b.Batch.Status)
	}
}

// TestUploadWithinTheRateLimit uploads through a budget of files prepared
// far smaller than the selection: the page sends smaller chunks when one is
// more than the budget ever holds, waits out Retry-After, and every file
// still arrives.
func TestUploadWithinTheRateLimit(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	logPath := filepath.Join(artifacts, "stack-rate-limit.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	s := startStack(t, logFile, map[string]string{"RATE_UPLOADS_BURST": "8", "RATE_UPLOADS_PER_MINUTE": "600"})
	key := s.user("ana@example.org", false)
	photos := distinctPhotos(t, 30)
	b := newBrowser(t, chrome)
	project := b.newProject(s.url, key, "Budget")
	b.run("choose 30 photos", chromedp.SetUploadFiles(chromedp.CSS("#file-input"), photos))
	s.waitReady(key, project, 30)
	b.waitJS("the page to say Searchable 30/30",
		`document.querySelector('#phase-searchable').textContent === 'Searchable 30/30'`)
	if got := b.text(`button[data-filter="failed"]`); got != "Failed (0)" {
		t.Errorf("the failed filter reads %q", got)
	}
	logs, _ := os.ReadFile(logPath)
	refused := 0
	for _, line := range strings.Split(string(logs), "\n") {
		if strings.Contains(line, "assets:prepareUpload") && strings.Contains(line, "status=429") {
			refused++
		}
	}
	if refused == 0 {
		t.Error("no prepare call was refused: the test did not exercise the limit")
	}
	if n := s.count(`SELECT count(*) FROM assets WHERE status = 'pending_upload'`); n != 0 {
		t.Errorf("%d assets were prepared and never uploaded", n)
	}
	t.Logf("%d prepare calls answered 429 on the way", refused)
}
