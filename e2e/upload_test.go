package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/tasks"
	"lightbox/testsupport/testenv"
	"lightbox/uploader"
)

// The command-line upload against a real server and worker: a first run
// sends every accepted file, a second sends nothing, an interrupted run
// finishes when run again, a 429 is waited out, and a file the worker
// cannot process fails the command, named.

// uploadStack is a stack for the upload tests and a user's key on it.
func uploadStack(t *testing.T, extra map[string]string) (*stack, string) {
	t.Helper()
	logFile, err := os.Create(filepath.Join(t.TempDir(), "stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	s := startStack(t, logFile, extra)
	return s, s.user("ana@example.org", false)
}

// events collects what a run reports.
type events struct {
	mu  sync.Mutex
	all []uploader.Event
}

func (e *events) add(ev uploader.Event) {
	if ev.Kind == uploader.EventBytes {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) of(kind uploader.EventKind) []uploader.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []uploader.Event
	for _, ev := range e.all {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// upload runs an upload in the test's process, bounded by pipelinePatience.
func (s *stack) runUpload(ctx context.Context, key string, o uploader.Options, evs *events) (*uploader.Result, error) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, pipelinePatience)
	defer cancel()
	o.URL, o.APIKey = s.url, key
	prev := o.Report
	o.Report = func(ev uploader.Event) {
		evs.add(ev)
		if prev != nil {
			prev(ev)
		}
	}
	return uploader.Run(ctx, o)
}

// corpusFolders are the corpus's photos and odd files: every one accepted
// and processed.
func corpusFolders(t *testing.T) ([]string, int) {
	t.Helper()
	var paths []string
	n := 0
	for _, dir := range []string{"photos", "odd"} {
		p := filepath.Join(testenv.Corpus(t), dir)
		entries, err := os.ReadDir(p)
		if err != nil {
			t.Fatal(err)
		}
		paths, n = append(paths, p), n+len(entries)
	}
	return paths, n
}

// processed counts the project's assets past processing.
func (s *stack) processed(project string) int {
	return s.count(`SELECT count(*) FROM assets WHERE project_id = $1 AND status IN ('cull', 'search', 'ai')`, project)
}

func TestUploadCommandSendsEachFileOnce(t *testing.T) {
	t.Parallel()
	s, key := uploadStack(t, nil)
	paths, n := corpusFolders(t)
	o := uploader.Options{NewTitle: "Corpus", Paths: paths, ChunkSize: 8}

	var first events
	res, err := s.runUpload(context.Background(), key, o, &first)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) > 0 {
		t.Fatalf("failures: %+v", res.Failures)
	}
	c := res.Counts
	if c.Files != n || c.Uploaded != n || c.Skipped != 0 || c.Jobs != n || c.Processed != n || c.JobsFailed != 0 {
		t.Errorf("the first run counts %+v, want %d files uploaded and processed", c, n)
	}
	if got := s.processed(res.ProjectID); got != n {
		t.Errorf("%d assets processed, want %d", got, n)
	}
	if len(res.Batches) < 2 {
		t.Errorf("%d batches: chunks of 8 should make several", len(res.Batches))
	}
	if len(first.of(uploader.EventProcessing)) == 0 || len(first.of(uploader.EventDone)) != 1 {
		t.Error("the run reported no processing progress, or not one end")
	}

	var second events
	again, err := s.runUpload(context.Background(), key, o, &second)
	if err != nil {
		t.Fatal(err)
	}
	if again.ProjectID != res.ProjectID {
		t.Errorf("--new with the same title went to project %s, then %s", res.ProjectID, again.ProjectID)
	}
	if c := again.Counts; c.Uploaded != 0 || c.Skipped != n || len(again.Failures) != 0 || len(again.Batches) != 0 {
		t.Errorf("the second run counts %+v, failures %+v; want all %d skipped", c, again.Failures, n)
	}
	if got := s.count(`SELECT count(*) FROM assets WHERE project_id = $1`, res.ProjectID); got != n {
		t.Errorf("the project has %d assets after two runs, want %d", got, n)
	}
}

func TestUploadCommandResumesAfterAnInterruption(t *testing.T) {
	t.Parallel()
	s, key := uploadStack(t, nil)
	paths, n := corpusFolders(t)
	o := uploader.Options{NewTitle: "Interrupted", Paths: paths, ChunkSize: 4, Concurrency: 2}

	// Stop the run as a Ctrl-C would, once a few files are finalized.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var first events
	o.Report = func(ev uploader.Event) {
		if ev.Kind == uploader.EventUploaded && len(first.of(uploader.EventUploaded)) >= 5 {
			cancel()
		}
	}
	if _, err := s.runUpload(ctx, key, o, &first); !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted run ended with %v", err)
	}
	sent := len(first.of(uploader.EventUploaded))
	if sent < 5 || sent >= n {
		t.Fatalf("the interrupted run finalized %d of %d files", sent, n)
	}

	// One more file's bytes arrived but the connection was lost before
	// finalize: the next run finalizes that asset rather than sending it
	// again. The file is one the interrupted run had not prepared.
	project := first.of(uploader.EventProject)[0].ProjectID
	var lost string
	for _, dir := range paths {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if lost == "" && s.count(`SELECT count(*) FROM assets WHERE project_id = $1 AND filename = $2`, project, e.Name()) == 0 {
				lost = filepath.Join(dir, e.Name())
			}
		}
	}
	if lost == "" {
		t.Fatal("the interrupted run prepared every file")
	}
	lostAsset := s.put(key, project, lost)[0]["assetId"].(string) // PUT, never finalized

	o.Report = nil
	var second events
	res, err := s.runUpload(context.Background(), key, o, &second)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) > 0 {
		t.Fatalf("failures: %+v", res.Failures)
	}
	if c := res.Counts; c.Skipped+c.Uploaded != n || c.Skipped < sent {
		t.Errorf("the second run counts %+v after %d were sent; want the rest of %d uploaded", c, sent, n)
	}
	if got := s.processed(res.ProjectID); got != n {
		t.Errorf("%d assets processed, want %d", got, n)
	}
	if got := s.count(`SELECT count(*) FROM assets WHERE project_id = $1 AND status <> 'pending_upload'`, res.ProjectID); got != n {
		t.Errorf("%d finalized assets, want %d: a file was sent twice", got, n)
	}
	if got := s.count(`SELECT count(*) FROM assets WHERE project_id = $1 AND status = 'pending_upload' AND checksum_sha256 IS NOT NULL`, res.ProjectID); got != 0 {
		t.Errorf("%d uploads whose bytes arrived were left unfinalized", got)
	}
	resumed := false
	for _, ev := range second.of(uploader.EventUploaded) {
		resumed = resumed || (ev.Path == lost && ev.AssetID == lostAsset)
	}
	if !resumed {
		t.Errorf("%s was PUT as asset %s before the run, and not finalized as that asset", lost, lostAsset)
	}
	t.Logf("interrupted after %d files; the second run skipped %d and uploaded %d", sent, res.Counts.Skipped, res.Counts.Uploaded)
}

// A key revoked while the command waits for processing ends the run with
// the refusal, rather than leaving it waiting for news that cannot come.
// The ingest queue is paused, so the batch cannot end on its own.
func TestUploadCommandEndsWhenItsKeyIsRevokedWhileWaiting(t *testing.T) {
	t.Parallel()
	s, key := uploadStack(t, nil)
	redis, err := asynq.ParseRedisURI(s.env.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	in := asynq.NewInspector(redis)
	defer in.Close()
	if err := in.PauseQueue(tasks.QueueOf(tasks.TypeIngest)); err != nil {
		t.Fatal(err)
	}
	paths, _ := corpusFolders(t)
	var keyID uuid.UUID
	if err := s.env.DB.Get(&keyID, `SELECT id FROM api_keys`); err != nil {
		t.Fatal(err)
	}
	revoke := func(ev uploader.Event) {
		if ev.Kind == uploader.EventUploadsDone {
			if err := s.env.Store.RevokeAPIKey(context.Background(), keyID); err != nil {
				t.Error(err)
			}
		}
	}
	var evs events
	_, err = s.runUpload(context.Background(), key, uploader.Options{NewTitle: "Revoked", Paths: paths[:1], Report: revoke}, &evs)
	var refused *uploader.APIError
	if !errors.As(err, &refused) || refused.Status != http.StatusUnauthorized {
		t.Fatalf("the run ended with %v, want the 401 of the revoked key", err)
	}
}

func TestUploadCommandWaitsOutTheRateLimit(t *testing.T) {
	t.Parallel()
	// A budget of 5 files at once, refilled at 2 a second: the first chunk
	// is too large for it ever, and the later ones wait for it.
	s, key := uploadStack(t, map[string]string{"RATE_UPLOADS_BURST": "5", "RATE_UPLOADS_PER_MINUTE": "120"})
	odd := filepath.Join(testenv.Corpus(t), "odd")
	entries, _ := os.ReadDir(odd)
	var evs events
	res, err := s.runUpload(context.Background(), key, uploader.Options{NewTitle: "Budget", Paths: []string{odd}}, &evs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) > 0 || res.Counts.Uploaded != len(entries) || res.Counts.Processed != len(entries) {
		t.Errorf("counts %+v, failures %+v; want all %d uploaded", res.Counts, res.Failures, len(entries))
	}
	limited := evs.of(uploader.EventRateLimited)
	if len(limited) == 0 {
		t.Fatal("no request was refused: the test did not exercise the limit")
	}
	for _, ev := range limited {
		if ev.WaitSeconds <= 0 {
			t.Errorf("a 429 was not waited out: %+v", ev)
		}
	}
	t.Logf("%d refusals waited out", len(limited))
}

// A quota of 4 files in flight and chunks of 4: every prepare after the
// first is refused until the run's own uploads finish. The refused
// prepare asks again within seconds, and the PUTs and finalizes that free
// the quota go on meanwhile, where holding every request for the answer's
// Retry-After (the earliest upload's expiry, 5 minutes here) stalled them
// all.
func TestUploadCommandWaitsForItsOwnUploadsUnderAFilesQuota(t *testing.T) {
	t.Parallel()
	s, key := uploadStack(t, map[string]string{"QUOTA_FILES_IN_FLIGHT": "4"})
	paths, n := corpusFolders(t)
	var evs events
	res, err := s.runUpload(context.Background(), key, uploader.Options{NewTitle: "Quota", Paths: paths, ChunkSize: 4}, &evs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) > 0 || res.Counts.Uploaded != n {
		t.Errorf("counts %+v, failures %+v; want all %d uploaded", res.Counts, res.Failures, n)
	}
	limited := evs.of(uploader.EventRateLimited)
	if len(limited) == 0 {
		t.Fatal("no prepare was refused: the test did not exercise the quota")
	}
	for _, ev := range limited {
		if ev.WaitSeconds > 10 {
			t.Fatalf("a refusal for the quota waited %.0f s, the earliest upload's expiry: %+v", ev.WaitSeconds, ev)
		}
	}
	t.Logf("%d refusals, each waited out in seconds", len(limited))
}

// stalledTransport holds the first PUT until its signed URL has expired,
// as a connection that stalled for longer than the URL lives would; the
// server then refuses it for real.
type stalledTransport struct{ stalled atomic.Bool }

func (st *stalledTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut && st.stalled.CompareAndSwap(false, true) {
		exp, err := strconv.ParseInt(req.URL.Query().Get("exp"), 10, 64)
		if err != nil {
			return nil, err
		}
		t := time.NewTimer(time.Until(time.Unix(exp, 0)) + time.Second)
		defer t.Stop()
		select {
		case <-t.C:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

func TestUploadCommandPreparesExpiredURLsAgain(t *testing.T) {
	t.Parallel()
	s, key := uploadStack(t, map[string]string{"UPLOAD_URL_TTL": "10s"})
	odd := filepath.Join(testenv.Corpus(t), "odd")
	entries, _ := os.ReadDir(odd)
	var evs events
	st := &stalledTransport{}
	res, err := s.runUpload(context.Background(), key, uploader.Options{NewTitle: "Stalled", Paths: []string{odd},
		Concurrency: 1, HTTPClient: &http.Client{Transport: st}}, &evs)
	if err != nil {
		t.Fatal(err)
	}
	if !st.stalled.Load() {
		t.Fatal("no PUT was held: the test did not exercise an expired URL")
	}
	if len(res.Failures) > 0 || res.Counts.Uploaded != len(entries) {
		t.Errorf("counts %+v, failures %+v; want all %d uploaded", res.Counts, res.Failures, len(entries))
	}
	// The stalled file's first asset waits, unfinalized, for the sweep;
	// a second one took its bytes.
	if got := s.count(`SELECT count(*) FROM assets WHERE project_id = $1 AND status = 'pending_upload'`, res.ProjectID); got < 1 {
		t.Errorf("%d assets left pending: the stalled file was not prepared again", got)
	}
	if got := s.count(`SELECT count(*) FROM assets WHERE project_id = $1 AND status <> 'pending_upload'`, res.ProjectID); got != len(entries) {
		t.Errorf("%d finalized assets, want %d", got, len(entries))
	}
}

// TestUploadCommandNamesFailedFiles runs the built command: usage errors
// exit 2 before any request, and a run in which one file is refused and
// another fails processing exits 1 naming both.
func TestUploadCommandNamesFailedFiles(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), pipelinePatience)
	defer cancel()
	cmd := testenv.BuildCommand(ctx, t, "../cmd/lightbox")
	s, key := uploadStack(t, nil)
	cmd.Env = []string{"LIGHTBOX_URL=" + s.url, "LIGHTBOX_API_KEY=" + key}
	lightbox := cmd.Run

	dir := t.TempDir()
	corpus := testenv.Corpus(t)
	for _, name := range []string{"bad/truncated-progressive.jpg", "bad/empty.jpg", "odd/palette.gif", "odd/rgba8.png", "README.md"} {
		data, err := os.ReadFile(filepath.Join(corpus, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if status, _, stderr := lightbox("upload", "--json", dir); status != 2 || !strings.Contains(stderr, "--project ID and --new TITLE") {
		t.Errorf("upload without a project: status %d, stderr %q; want 2", status, stderr)
	}
	if got := s.count(`SELECT count(*) FROM projects`); got != 0 {
		t.Errorf("a usage error made %d projects", got)
	}

	status, stdout, stderr := lightbox("upload", "--new", "Mixed", dir, "--json")
	if status != 1 {
		t.Fatalf("status %d, want 1; stderr:\n%s", status, stderr)
	}
	for _, want := range []string{
		"2 of 4 files failed",
		filepath.Join(dir, "empty.jpg") + ": upload failed: validation_failed",
		filepath.Join(dir, "truncated-progressive.jpg") + ": processing failed: corrupt_image",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	kinds := map[uploader.EventKind]int{}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var ev uploader.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("a line of --json is not JSON: %q", sc.Text())
		}
		kinds[ev.Kind]++
	}
	if kinds[uploader.EventUploaded] != 3 || kinds[uploader.EventFailed] != 2 || kinds[uploader.EventIgnored] != 1 || kinds[uploader.EventDone] != 1 {
		t.Errorf("--json printed %v", kinds)
	}
}
