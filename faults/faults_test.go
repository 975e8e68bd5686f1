package faults_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/redis/go-redis/v9"

	"lightbox/store"
	"lightbox/testsupport/procs"
	"lightbox/testsupport/testenv"
)

// form is how hard the suite pushes: the short form runs in `make test`,
// the long one in `make chaos`.
type form struct {
	photos   int           // uploaded per fault
	redis    time.Duration // Redis down between its kill and its restart
	postgres time.Duration // Postgres stopped
	ledger   time.Duration // the ledger answering 503
	disk     time.Duration // the blob disk full
}

// long selects the long form (`make chaos` sets LIGHTBOX_CHAOS=1).
var long = os.Getenv("LIGHTBOX_CHAOS") != ""

var (
	shortForm = form{photos: 12, redis: 5 * time.Second, postgres: 20 * time.Second, ledger: 20 * time.Second, disk: 5 * time.Second}
	longForm  = form{photos: 100, redis: time.Minute, postgres: 2 * time.Minute, ledger: 10 * time.Minute, disk: time.Minute}
)

// imported is how many photos each fault also imports by URL.
const imported = 2

func current() form {
	if long {
		return longForm
	}
	return shortForm
}

// rig is one fault's fresh state: a user and project on a stack of real
// processes, and a loopback web server holding photos to import by URL.
type rig struct {
	t            *testing.T
	db           *sqlx.DB
	stack        *procs.Stack
	key, project string
	photos       []photo // uploaded, then imported
	imports      []photo
	source       *httptest.Server
}

// newRig records a user and project through st and shares dsn and
// redisURL with the stack's processes; the sweeper runs every 5 s, and URL
// imports may reach the loopback source.
func newRig(t *testing.T, st *store.Store, db *sqlx.DB, dsn, redisURL string) *rig {
	t.Helper()
	r := &rig{t: t, db: db, stack: procs.NewStack(t, dsn, redisURL), photos: photos(t, current().photos), imports: photos(t, imported)}
	r.stack.Shared["SWEEP_INTERVAL"] = "5s"
	r.stack.Shared["DOWNLOAD_ALLOW_NETS"] = "127.0.0.1/32"
	r.key, r.project = user(t, st)
	r.source = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		for _, p := range r.imports {
			if req.URL.Path == "/"+p.Name {
				w.Header().Set("Content-Type", "image/jpeg")
				w.Write(p.Data)
				return
			}
		}
		http.NotFound(w, req)
	}))
	t.Cleanup(r.source.Close)
	return r
}

// inFlight starts, through base, a URL import of the rig's import photos
// and a web export of what is uploaded so far, so both run during the
// fault; settle then expects the imported photos too.
func (r *rig) inFlight(base string) {
	r.t.Helper()
	urls := make([]string, len(r.imports))
	for i, p := range r.imports {
		urls[i] = r.source.URL + "/" + p.Name
	}
	if _, err := call(base, "POST", "/v1/projects/"+r.project+"/assets:import", r.key, map[string]any{"urls": urls}, nil); err != nil {
		r.t.Fatal(err)
	}
	if _, err := call(base, "POST", "/v1/projects/"+r.project+"/exports", r.key, map[string]any{"preset": "web"}, nil); err != nil {
		r.t.Fatal(err)
	}
	r.photos = append(r.photos, r.imports...)
}

// sharedRig is newRig on the shared Postgres (the test's own database) and
// the given Redis, or the test's own database of the shared one.
func sharedRig(t *testing.T, redisURL string) *rig {
	t.Helper()
	env := testenv.New(t)
	if redisURL == "" {
		redisURL = env.RedisURL
	}
	return newRig(t, env.Store, env.DB, env.DSN, redisURL)
}

// upload sends every photo through the servers, failing t on an error.
func (r *rig) upload() int {
	r.t.Helper()
	bases := make([]string, len(r.stack.Servers))
	for i, s := range r.stack.Servers {
		bases[i] = s.URL
	}
	_, retried, err := uploadAll(bases, r.key, r.project, r.photos)
	if err != nil {
		r.t.Fatal(err)
	}
	r.inFlight(bases[0])
	return retried
}

// uploadAsync uploads in the background; the channel gives the outcome.
func (r *rig) uploadAsync() <-chan error {
	bases := make([]string, len(r.stack.Servers))
	for i, s := range r.stack.Servers {
		bases[i] = s.URL
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := uploadAll(bases, r.key, r.project, r.photos)
		done <- err
	}()
	return done
}

// ingesting waits until worker w has finished at least one ingest: the
// batch is under way.
func (r *rig) ingesting(w *procs.Proc) {
	r.t.Helper()
	testenv.Eventually(r.t, w.Name+" to finish an ingest", patience, func() bool { return ingestsDone(r.t, w) > 0 })
}

// midIngest starts a server and a worker, uploads every photo, and returns
// once the batch is under way, with the worker.
func (r *rig) midIngest() *procs.Proc {
	r.t.Helper()
	r.stack.AddServer(nil)
	w := r.stack.AddWorker(nil)
	r.upload()
	r.ingesting(w)
	return w
}

func (r *rig) settle(fault string, since time.Time) result {
	r.t.Helper()
	return settle(r.t, r.db, fault, r.project, r.photos, since)
}

// TestFaults takes an ingest through each fault in turn, each with fresh
// state, and checks that every asset ends final, nothing is done twice and
// no attestation is lost.
func TestFaults(t *testing.T) {
	t.Parallel()
	for _, f := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"KillWorker", killWorker},
		{"KillServer", killServer},
		{"RestartRedis", restartRedis},
		{"FlushRedis", flushRedis},
		{"StopPostgres", stopPostgres},
		{"FillBlobDisk", fillBlobDisk},
		{"LedgerDown", ledgerDown},
		{"BackupKilled", backupKilled},
		{"BackupDuringUploads", backupDuringUploads},
		{"BackupTargetFull", backupTargetFull},
		{"BackupTargetUnreachable", backupTargetUnreachable},
	} {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			f.run(t)
		})
	}
}

// killWorker kills the only worker with SIGKILL mid-ingest and starts it
// again, as a supervisor would: the tasks it held come back once their
// lease has run out.
func killWorker(t *testing.T) {
	r := sharedRig(t, "")
	w := r.midIngest()
	w.Kill()
	killed := time.Now()
	w.Restart()
	r.settle("kill -9 worker mid-ingest", killed)
}

// killServer kills one of two servers with SIGKILL while clients upload
// through both: each upload it broke is prepared again through the other.
func killServer(t *testing.T) {
	r := sharedRig(t, "")
	a, b := r.stack.AddServer(nil), r.stack.AddServer(nil)
	r.stack.AddWorker(nil)
	uploaded := r.uploadAsync()
	testenv.Eventually(t, "a third of the uploads to be finalized", patience, func() bool {
		return count(t, r.db, `SELECT count(*) FROM assets WHERE project_id = $1 AND status <> 'pending_upload'`, r.project) >= len(r.photos)/3
	})
	a.Kill()
	killed := time.Now()
	if err := <-uploaded; err != nil {
		t.Fatal(err)
	}
	r.inFlight(b.URL)
	a.Restart()
	r.settle("kill -9 server mid-upload", killed)
}

// restartRedis kills a Redis that appends every write to its AOF and
// starts it again on the same files: nothing queued is lost.
func restartRedis(t *testing.T) {
	rd := procs.StartRedis(t)
	r := sharedRig(t, rd.URL)
	r.midIngest()
	rd.Kill()
	time.Sleep(current().redis) // the outage itself
	rd.Restart()
	r.settle("Redis killed, restarted (AOF)", time.Now())
}

// flushRedis empties Redis mid-ingest, as losing it for good would: the
// sweeper puts the work back from Postgres.
func flushRedis(t *testing.T) {
	rd := procs.StartRedis(t)
	r := sharedRig(t, rd.URL)
	r.midIngest()
	opt, _ := redis.ParseURL(rd.URL)
	client := redis.NewClient(opt)
	defer client.Close()
	if err := client.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	r.settle("Redis FLUSHALL (total loss)", time.Now())
}

// stopPostgres stops the only Postgres mid-ingest for a while.
func stopPostgres(t *testing.T) {
	pg := procs.StartPostgres(t)
	ctx := context.Background()
	st, err := store.Open(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx, nil); err != nil {
		t.Fatal(err)
	}
	db, err := sqlx.Open("postgres", pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rd := procs.StartRedis(t)
	r := newRig(t, st, db, pg.URL, rd.URL)
	r.midIngest()
	if err := pg.Stop(); err != nil {
		t.Fatalf("postgres did not stop cleanly: %v", err)
	}
	time.Sleep(current().postgres) // the outage itself
	pg.Restart()
	r.settle(fmt.Sprintf("Postgres stopped %v", current().postgres), time.Now())
}

// fillBlobDisk keeps the blobs on a small tmpfs, fills it while the
// worker ingests and an upload arrives, then frees it: the ingests wait
// for room without spending retries, the upload retries, and both finish.
func fillBlobDisk(t *testing.T) {
	dir := t.TempDir()
	// Room for every original, its derived files and the export, once the
	// filler is gone: about 3 MiB a photo.
	size := fmt.Sprintf("size=%dm", 32+3*(current().photos+imported))
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, size); err != nil {
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
	r.stack.Shared["BLOB_BACKEND"] = "disk"
	server := r.stack.AddServer(map[string]string{"DATA_DIR": dir})
	r.upload()

	filler := filepath.Join(dir, "filler")
	fill(t, filler)
	w := r.stack.AddWorker(map[string]string{"DATA_DIR": dir})
	late := make(chan error, 1)
	go func() {
		_, _, err := uploadAll([]string{server.URL}, r.key, r.project, []photo{last})
		late <- err
	}()
	testenv.Eventually(t, "an ingest to wait for the full disk", patience, func() bool {
		return testenv.Scrape(t, w.URL+"/metrics", "").Value("lightbox_task_duration_seconds",
			map[string]string{"type": "asset:ingest", "outcome": "deferred"}) > 0
	})
	time.Sleep(current().disk) // the outage itself
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	if err := <-late; err != nil {
		t.Fatal(err)
	}
	r.photos = append(r.photos, last)
	r.settle("blob disk full", freed)
}

// fill writes path until the disk under it is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

// ledgerDown runs the workers against an HTTP ledger that answers 503
// for a while, then comes back: every attestation is published, none
// abandoned.
func ledgerDown(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	ledger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(ledger.Close)
	r := sharedRig(t, "")
	r.stack.Shared["CHAIN_LEDGER_URL"] = ledger.URL
	r.stack.AddServer(nil)
	r.stack.AddWorker(nil)
	r.upload()
	time.Sleep(current().ledger) // the outage itself
	down.Store(false)
	r.settle(fmt.Sprintf("ledger down %v", current().ledger), time.Now())
}
