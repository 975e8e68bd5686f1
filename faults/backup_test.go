package faults_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lightbox/backup"
	"lightbox/blob"
	"lightbox/chain"
	"lightbox/testsupport/procs"
	"lightbox/testsupport/testenv"
)

// backupKilled kills a backup with SIGKILL once it has copied some files:
// it is listed as incomplete, never as complete, and the next backup
// completes, copying only the files the killed one had not.
func backupKilled(t *testing.T) {
	r := sharedRig(t, "")
	data := t.TempDir() // the worker's, holding the chain's ledger
	r.stack.AddServer(nil)
	r.stack.AddWorker(map[string]string{"DATA_DIR": data})
	r.upload()
	r.idle()

	dir := t.TempDir()
	g := newGate(t, 3)
	first := r.backgroundBackup("backup-killed", data, g, dir)
	testenv.Eventually(t, "the backup to copy some files", patience, func() bool {
		if !first.Running() {
			t.Fatalf("the backup ended before it was killed:\n%s", first.Log())
		}
		return len(blobFiles(t, dir)) > 0
	})
	first.Kill()
	killed := time.Now()
	left := blobFiles(t, dir)
	ids, err := os.ReadDir(filepath.Join(dir, "backups"))
	if err != nil || len(ids) != 1 {
		t.Fatalf("the killed backup left %v in backups/ (%v), want one folder", ids, err)
	}
	stopped := ids[0].Name()

	cli := r.lightbox(data, nil)
	out, _ := run(t, cli, 0, "backup", "list", "--from", dir)
	if !strings.Contains(out, "no complete backup in") || !strings.Contains(out, "incomplete, not restorable") || !strings.Contains(out, stopped) {
		t.Errorf("backup list, after a backup was killed, printed %q; want none complete and %s incomplete", out, stopped)
	}

	out, _ = run(t, cli, 0, "backup", "create", "--to", dir)
	id, copied, present := createReport(t, out)
	m := manifest(t, dir, id)
	need := map[string]bool{}
	fromLeft := 0 // the manifest's files whose bytes the killed backup had copied
	for _, b := range m.Blobs {
		need[b.SHA256] = true
		if left[b.SHA256] != nil {
			fromLeft++
		}
	}
	for sum := range left {
		if !need[sum] {
			t.Errorf("the killed backup copied %s, which the next one does not name", sum[:12])
		}
	}
	// Photos that differ only past their JPEG's end draw the same
	// thumbnail, so files may share their bytes: the target holds each
	// once, and a copy running beside another of the same bytes may
	// count as copied too.
	if present < fromLeft || copied+present != len(m.Blobs) || copied < len(need)-len(left) {
		t.Errorf("the second backup copied %d and found %d of %d files (%d distinct); the killed one had left %d of them, "+
			"which %d files name", copied, present, len(m.Blobs), len(need), len(left), fromLeft)
	}
	after := blobFiles(t, dir)
	for sum, fi := range left {
		if !os.SameFile(fi, after[sum]) {
			t.Errorf("the second backup wrote %s again, which the killed one had copied", sum[:12])
		}
	}
	if len(after) != len(need) {
		t.Errorf("the target holds %d blobs after the second backup, whose manifest names %d", len(after), len(need))
	}
	out, _ = run(t, cli, 0, "backup", "verify", "--from", dir)
	if !strings.Contains(out, "backup "+id+":") || !strings.Contains(out, "each as its manifest says") {
		t.Errorf("backup verify printed %q", out)
	}
	out, _ = run(t, cli, 0, "backup", "list", "--from", dir)
	if !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(id)+`\s`).MatchString(out) ||
		!strings.Contains(out, "incomplete, not restorable (stopped midway, or running now): "+stopped+"\n") {
		t.Errorf("backup list printed %q; want %s complete and %s incomplete", out, id, stopped)
	}
	t.Logf("killed after %d of %d files; the next backup copied %d and found %d there", len(left), len(need), copied, present)
	r.settle("backup killed midway", killed)
}

// backupDuringUploads takes a backup while photos upload and ingest: at
// its snapshot some photos are finalized and others have their bytes
// stored but their finalize held back, to go through while it copies
// files. Restored into an empty database and blob store, every photo
// finalized before the backup began is there with its original, a photo
// finalized after the snapshot is at most a pending upload, and no
// finalized row lacks its file.
func backupDuringUploads(t *testing.T) {
	r := sharedRig(t, "")
	data := t.TempDir()
	front := newFinalizeHold(t, r.stack.AddServer(nil).URL)
	r.stack.AddWorker(map[string]string{"DATA_DIR": data})
	split := len(r.photos) * 2 / 3
	early, later := r.photos[:split], r.photos[split:]
	type uploaded struct {
		ids []string
		err error
	}
	uploadAsync := func(ps []photo) <-chan uploaded {
		c := make(chan uploaded, 1)
		go func() {
			ids, _, err := uploadAll([]string{front.URL}, r.key, r.project, ps)
			c <- uploaded{ids, err}
		}()
		return c
	}
	uploadingEarly := uploadAsync(early)
	testenv.Eventually(t, "a third of the first uploads to be finalized", patience, func() bool {
		return count(t, r.db, `SELECT count(*) FROM assets WHERE project_id = $1 AND status <> 'pending_upload'`, r.project) >= len(early)/3
	})
	front.close()
	uploadingLater := uploadAsync(later)
	testenv.Eventually(t, "an upload to wait to be finalized", patience, func() bool { return len(front.held()) > 0 })
	pending := front.held() // their bytes are stored, their rows not finalized
	var before []string
	if err := r.db.Select(&before, `SELECT checksum_sha256 FROM assets WHERE project_id = $1 AND status <> 'pending_upload'`, r.project); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	g := newGate(t, 0)
	started := time.Now()
	b := r.backgroundBackup("backup", data, g, dir)
	// A read of a file means the snapshot is taken and dumped, and the
	// files it names listed.
	testenv.Eventually(t, "the backup to start copying files", patience, func() bool {
		if !b.Running() {
			t.Fatalf("the backup ended before it copied a file:\n%s", b.Log())
		}
		return g.held() > 0
	})
	front.open()
	if u := <-uploadingEarly; u.err != nil {
		t.Fatal(u.err)
	}
	u := <-uploadingLater
	if u.err != nil {
		t.Fatal(u.err)
	}
	after := u.ids // finalized after the snapshot
	g.open()
	testenv.Eventually(t, "the backup to finish", patience, func() bool { return !b.Running() })
	done := regexp.MustCompile(`(?m)^backup (\S+) complete in `).FindStringSubmatch(b.Log())
	if done == nil {
		t.Fatalf("the backup did not complete:\n%s", b.Log())
	}
	r.settle("backup during uploads", started)

	// Another machine: an empty database, an empty DATA_DIR on disk.
	fresh := testenv.New(t)
	restored := t.TempDir()
	cli := r.lightbox(restored, map[string]string{"DATABASE_URL": fresh.DSN, "REDIS_URL": fresh.RedisURL, "BLOB_BACKEND": "disk"})
	out, _ := run(t, cli, 0, "backup", "restore", "--from", dir, done[1])
	if !strings.Contains(out, "originals match their rows' SHA-256") || !strings.Contains(out, "attestations verified from the first") {
		t.Errorf("backup restore printed %q", out)
	}

	disk, err := blob.NewDisk(filepath.Join(restored, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	var assets []struct {
		ID     string  `db:"id"`
		Key    string  `db:"blob_key"`
		Sum    *string `db:"checksum_sha256"`
		Status string  `db:"status"`
	}
	if err := fresh.DB.Select(&assets, `SELECT id::text AS id, blob_key, checksum_sha256, status FROM assets`); err != nil {
		t.Fatal(err)
	}
	byID, bySum := map[string]string{}, map[string]string{} // statuses
	finalized := 0
	for _, a := range assets {
		byID[a.ID] = a.Status
		if a.Sum != nil {
			bySum[*a.Sum] = a.Status
		}
		// An upload not finalized may never have sent its bytes, and a
		// duplicate's are discarded at finalize.
		if a.Status == "pending_upload" || a.Status == "duplicate" {
			continue
		}
		finalized++
		if a.Sum == nil {
			t.Errorf("restored asset %s is %s without a checksum", a.ID, a.Status)
			continue
		}
		if got, err := sha256Of(disk, a.Key); err != nil {
			t.Errorf("restored asset %s is %s, but its original: %v", a.ID, a.Status, err)
		} else if got != *a.Sum {
			t.Errorf("restored asset %s's original has SHA-256 %s, its row says %s", a.ID, got, *a.Sum)
		}
	}
	for _, sum := range before {
		if s := bySum[sum]; s == "" || s == "pending_upload" {
			t.Errorf("photo %s, finalized before the backup began, is not finalized in the restore (%q)", sum[:12], s)
		}
	}
	for _, id := range pending {
		if s := byID[id]; s != "pending_upload" {
			t.Errorf("asset %s, prepared before the snapshot and finalized after it, is %q in the restore; want pending_upload", id, s)
		}
	}
	for _, id := range after {
		if s := byID[id]; s != "" && s != "pending_upload" {
			t.Errorf("asset %s, finalized after the snapshot, is %s in the restore", id, s)
		}
	}
	var files []string
	if err := fresh.DB.Select(&files, `SELECT blob_key FROM asset_files`); err != nil {
		t.Fatal(err)
	}
	for _, key := range files {
		if _, err := disk.Stat(context.Background(), key); err != nil {
			t.Errorf("restored file %s, which a row names: %v", key, err)
		}
	}
	t.Logf("restored %d finalized photos of %d uploaded (%d finalized when the backup began, %d waiting to be), and %d derived files",
		finalized, len(r.photos), len(before), len(pending), len(files))
}

// backupTargetFull backs up into a tmpfs with room for the database dump
// but not the files: the backup fails saying the target is full, is not
// listed as complete, and a photo uploaded meanwhile is ingested like the
// others.
func backupTargetFull(t *testing.T) {
	const room = 2 << 20
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", room)); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v): this fault needs root or CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	r := sharedRig(t, "")
	last := r.photos[len(r.photos)-1]
	r.photos = r.photos[:len(r.photos)-1]
	var originals int
	for _, p := range r.photos {
		originals += len(p.Data)
	}
	if originals < 2*room {
		t.Fatalf("the originals hold %d bytes, too few to fill a target of %d", originals, room)
	}
	data := t.TempDir()
	server := r.stack.AddServer(nil)
	r.stack.AddWorker(map[string]string{"DATA_DIR": data})
	r.upload()

	late := make(chan error, 1)
	go func() {
		_, _, err := uploadAll([]string{server.URL}, r.key, r.project, []photo{last})
		late <- err
	}()
	cli := r.lightbox(data, nil)
	_, stderr := run(t, cli, 1, "backup", "create", "--to", dir)
	failed := time.Now()
	if !strings.Contains(stderr, "backup not taken") || !strings.Contains(stderr, "the backup target "+dir+" is full") {
		t.Errorf("a backup into a full target said %q; want it to say the target is full", stderr)
	}
	t.Logf("%s", strings.TrimSpace(stderr))
	if out, _ := run(t, cli, 0, "backup", "list", "--from", dir); !strings.Contains(out, "no complete backup in") {
		t.Errorf("backup list, after a backup ran out of room, printed %q", out)
	}
	if err := <-late; err != nil {
		t.Fatal(err)
	}
	r.photos = append(r.photos, last)
	r.settle("backup target full", failed)
}

// backupTargetUnreachable backs up into a bucket reached through a proxy
// that goes down once the files are being copied: the backup fails saying
// the target does not answer, is not listed as complete once it answers
// again, and the ingest under way finishes.
func backupTargetUnreachable(t *testing.T) {
	bucket := testenv.S3(t)
	u, err := url.Parse(bucket.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, u.Host)
	r := sharedRig(t, "")
	data := t.TempDir()
	r.stack.AddServer(nil)
	r.stack.AddWorker(map[string]string{"DATA_DIR": data})
	r.upload()

	g := newGate(t, 0)
	to := "s3://" + bucket.Bucket + "/nightly"
	through := map[string]string{"LIGHTBOX_BACKUP_S3_ENDPOINT": "http://" + proxy.Addr}
	b := r.backgroundBackup("backup", data, g, to, through)
	testenv.Eventually(t, "the backup to start copying files", patience, func() bool {
		if !b.Running() {
			t.Fatalf("the backup ended before it copied a file:\n%s", b.Log())
		}
		return g.held() > 0
	})
	proxy.Down()
	cut := time.Now()
	g.open()
	testenv.Eventually(t, "the backup to give up", patience, func() bool { return !b.Running() })
	if log := b.Log(); !strings.Contains(log, "backup not taken") || !strings.Contains(log, "does not answer") {
		t.Errorf("a backup whose target went away said:\n%s\nwant that the target does not answer", log)
	} else {
		t.Logf("%s", log[strings.LastIndex(log, "lightbox: "):])
	}
	proxy.Up()
	if out, _ := run(t, r.lightbox(data, through), 0, "backup", "list", "--from", to); !strings.Contains(out, "no complete backup in") ||
		!strings.Contains(out, "incomplete, not restorable") {
		t.Errorf("backup list, after the target went away mid-backup, printed %q", out)
	}
	r.settle("backup target unreachable", cut)
}

// idle waits until the project's work is over, as settle does before its
// checks, so that a backup finds every photo ingested and attested.
func (r *rig) idle() {
	r.t.Helper()
	testenv.Eventually(r.t, "the project's work to be over", max(patience, chain.StaleAfter+2*time.Minute), func() bool {
		return tryCount(r.db, `SELECT
			(SELECT count(*) FROM assets WHERE project_id = $1 AND status = 'uploaded') +
			(SELECT count(*) FROM jobs WHERE project_id = $1 AND status IN ('queued', 'running')) +
			(SELECT count(*) FROM exports WHERE project_id = $1 AND status IN ('queued', 'running')) +
			(SELECT count(*) FROM attestation_queue q JOIN assets a ON a.id = q.asset_id
				WHERE a.project_id = $1 AND q.status IN ('pending', 'signing', 'failed'))`, r.project) == 0
	})
}

// cliEnv is what an operator on one of the stack's machines runs the
// lightbox command with: the stack's settings, DATA_DIR (where the
// worker keeps the chain's ledger), and extra on top.
func (r *rig) cliEnv(dataDir string, extra ...map[string]string) map[string]string {
	env := maps.Clone(r.stack.Shared)
	env["DATA_DIR"] = dataDir
	for _, e := range extra {
		maps.Copy(env, e)
	}
	return env
}

// lightbox is the lightbox command, run to its end with cliEnv.
func (r *rig) lightbox(dataDir string, extra map[string]string) *testenv.Command {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience) // bounds a hang only
	r.t.Cleanup(cancel)
	c := testenv.BuildCommand(ctx, r.t, "lightbox/cmd/lightbox")
	for k, v := range r.cliEnv(dataDir, extra) {
		c.Env = append(c.Env, k+"="+v)
	}
	return c
}

// backgroundBackup starts `lightbox backup create --to to` as a process
// of its own, reading the service's blobs through g.
func (r *rig) backgroundBackup(name, dataDir string, g *gate, to string, extra ...map[string]string) *procs.Proc {
	r.t.Helper()
	env := r.cliEnv(dataDir, append(extra, map[string]string{"S3_ENDPOINT": g.URL})...)
	return procs.Start(r.t, procs.Options{Name: name, Argv: []string{procs.Binary(r.t, "lightbox"), "backup", "create", "--to", to}, Env: env})
}

// run runs c with args, failing t unless it exits with want.
func run(t *testing.T, c *testenv.Command, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	status, stdout, stderr := c.Run(args...)
	if status != want {
		t.Fatalf("lightbox %s: status %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), status, want, stdout, stderr)
	}
	return stdout, stderr
}

// createReport reads what `backup create` printed: the backup's id, and
// how many of its files it copied and found in the target already.
func createReport(t *testing.T, out string) (id string, copied, present int) {
	t.Helper()
	m := regexp.MustCompile(`(?s)^backup (\S+) complete in .*\nfiles: \d+, (\d+) copied \([^)]*\), (\d+) already there`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("backup create printed %q", out)
	}
	copied, _ = strconv.Atoi(m[2])
	present, _ = strconv.Atoi(m[3])
	return m[1], copied, present
}

// manifest reads backup id's manifest in the folder dir.
func manifest(t *testing.T, dir, id string) *backup.Manifest {
	t.Helper()
	ctx := context.Background()
	tg, err := backup.OpenTarget(ctx, backup.Location{Dir: dir}, blob.S3Config{}, false)
	if err != nil {
		t.Fatal(err)
	}
	m, err := backup.Find(ctx, tg, id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// blobFiles are the blobs a backup folder holds whole, by SHA-256; the
// temporary files of copies cut short are not among them.
func blobFiles(t *testing.T, dir string) map[string]fs.FileInfo {
	t.Helper()
	out := map[string]fs.FileInfo{}
	err := filepath.WalkDir(filepath.Join(dir, "blobs"), func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".upload-") {
			return err
		}
		fi, err := e.Info()
		if err == nil {
			out[e.Name()] = fi
		}
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

func sha256Of(s blob.Store, key string) (string, error) {
	f, _, err := s.Open(context.Background(), key)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// finalizeHold stands in front of an API server and, while closed, holds
// each finalizeUpload request: uploads whose bytes are stored and whose
// rows are not finalized yet, for as long as the test needs.
type finalizeHold struct {
	URL    string
	mu     sync.Mutex
	closed chan struct{} // nil while open
	ids    []string      // the assets of the requests held
}

func newFinalizeHold(t *testing.T, server string) *finalizeHold {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	h := &finalizeHold{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, ":finalizeUpload") {
			if wait := h.hold(req); wait != nil {
				select {
				case <-wait:
				case <-req.Context().Done():
					return
				}
			}
		}
		proxy.ServeHTTP(w, req)
	}))
	h.URL = srv.URL
	t.Cleanup(func() {
		h.open()
		srv.Close()
	})
	return h
}

// hold records the assets req finalizes and returns what to wait on; nil
// while open.
func (h *finalizeHold) hold(req *http.Request) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed == nil {
		return nil
	}
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	var f struct {
		Assets []struct {
			AssetID string `json:"assetId"`
		} `json:"assets"`
	}
	json.Unmarshal(body, &f)
	for _, a := range f.Assets {
		h.ids = append(h.ids, a.AssetID)
	}
	return h.closed
}

func (h *finalizeHold) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed == nil {
		h.closed = make(chan struct{})
	}
}

func (h *finalizeHold) open() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed != nil {
		close(h.closed)
		h.closed = nil
	}
}

// held are the assets whose finalize has been held so far.
func (h *finalizeHold) held() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ids...)
}

// gate stands between the lightbox command and the test S3 server. It
// forwards each request as it came, with the Host it was signed for, and
// holds reads of objects: the first pass are answered whole, the others
// get their headers (the client's Stat returns) and their bytes only once
// the gate opens. A backup reading through it so stops copying at a
// point of the test's choosing, for as long as the test needs.
type gate struct {
	URL    string
	s3     string // host:port
	pass   int
	tr     *http.Transport
	mu     sync.Mutex
	reads  int
	opened chan struct{}
	once   sync.Once
}

func newGate(t *testing.T, pass int) *gate {
	t.Helper()
	endpoint := os.Getenv("LIGHTBOX_TEST_S3_ENDPOINT")
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		t.Fatalf("LIGHTBOX_TEST_S3_ENDPOINT %q is not an http URL", endpoint)
	}
	g := &gate{s3: u.Host, pass: pass, tr: &http.Transport{DisableCompression: true}, opened: make(chan struct{})}
	srv := httptest.NewServer(g)
	g.URL = srv.URL
	t.Cleanup(func() {
		g.open()
		srv.Close()
		g.tr.CloseIdleConnections()
	})
	return g
}

// open lets every read held, and every later one, through.
func (g *gate) open() { g.once.Do(func() { close(g.opened) }) }

// held is how many object reads the gate has held.
func (g *gate) held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(0, g.reads-g.pass)
}

func (g *gate) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.RequestURI = "http", g.s3, ""
	res, err := g.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	_, key, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	hold := false
	if req.Method == http.MethodGet && res.StatusCode == http.StatusOK && key != "" {
		g.mu.Lock()
		g.reads++
		hold = g.reads > g.pass
		g.mu.Unlock()
	}
	var body io.Reader = res.Body
	if hold {
		// Read whole now, so the S3 server is not kept waiting.
		b, err := io.ReadAll(res.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body = bytes.NewReader(b)
	}
	maps.Copy(w.Header(), res.Header)
	w.WriteHeader(res.StatusCode)
	if hold {
		w.(http.Flusher).Flush()
		select {
		case <-g.opened:
		case <-req.Context().Done():
			return
		}
	}
	io.Copy(w, body)
}
