package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/store"
	"lightbox/testsupport/procstat"
	"lightbox/testsupport/testenv"
)

// BenchmarkListDuringBackup measures what a backup costs the people using
// the service meanwhile. User A has a project of 2,000 photos (a 1 MiB
// original, a 24 KiB thumbnail and a 256 KiB preview each, on disk in the
// server's blob folder), user B one of 200. The server is the built
// cmd/server and the backup the built `lightbox backup create`
// (backup.Create with its defaults, as the worker's scheduled backup runs
// it), each a process of its own as in production, from the same database
// and blob folder to a folder target; this process only sends requests.
//
// Four clients, each on a kept-alive connection, ask for B's grid (GET
// /v1/projects/{id}/assets?limit=1000, the page size the web app's grid
// asks for: all 200 of B's assets) one request after another:
// listIdleRequests of them with nothing else running, half before the
// backup and half after it, so that a load beside the benchmark that comes
// or goes meets both sides; then for as long as a backup of the whole
// service runs, counting only the requests begun after it started and
// answered before it ended. p99_x_idle is the backup's p99 over idle's:
// the goal is at most 2.
//
//	go test -run '^$' -bench BenchmarkListDuringBackup -benchtime 1x -timeout 30m ./server
func BenchmarkListDuringBackup(b *testing.B) {
	const (
		photosA = 2000
		photosB = 200
		clients = 4
	)
	ctx := context.Background()
	env := testenv.New(b)
	dataDir := b.TempDir()
	blobs, err := blob.NewDisk(filepath.Join(dataDir, "blobs"))
	if err != nil {
		b.Fatal(err)
	}
	ownerA, projectA := env.Project(b)
	ownerB, projectB := env.Project(b)
	keyB, _, err := env.Store.CreateAPIKey(ctx, ownerB, "bench")
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	storedPhotos(b, env, blobs, ownerA, projectA, photosA)
	storedPhotos(b, env, blobs, ownerB, projectB, photosB)
	// What autovacuum would have done by the time anyone browses them.
	if _, err := env.DB.ExecContext(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	seedSecs := time.Since(start).Seconds()

	srv := startServerProcess(b, env, map[string]string{
		"DATA_DIR": dataDir, "RATE_API_PER_MINUTE": "1000000", "RATE_API_BURST": "1000000",
	})
	l := &lister{
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}},
		url:    "http://" + srv.addr + "/v1/projects/" + projectB.String() + "/assets?limit=1000",
		key:    keyB, items: photosB,
	}
	defer l.client.CloseIdleConnections()
	// Warm: connections, query plans, the server's caches.
	l.run(b, clients, 100, nil)

	// The backup is `lightbox backup create`, a process of its own beside
	// the server's, as the worker's scheduled one is: backup.Create with
	// its defaults, from the server's database and blob folder.
	cli := testenv.Binary(b, "lightbox/cmd/lightbox")
	cliEnv := append(os.Environ(), "DATABASE_URL="+env.DSN, "REDIS_URL="+env.RedisURL, "DATA_DIR="+dataDir,
		"UPLOAD_SECRET="+testUploadSecret, "LOG_LEVEL=warn")
	files := 3 * (photosA + photosB)
	var idle, during, dumping, copying []time.Duration
	var backupTime, dumpTime, idleServerCPU, busyServerCPU, idleMachine, busyMachine, idleWall, backupCPU time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		to := b.TempDir()
		b.StartTimer()

		phase := func(serverCPU, machine, wall *time.Duration, f func()) {
			cpu0, m0, t0 := procstat.CPU(srv.pid), procstat.MachineCPU(), time.Now()
			f()
			*serverCPU += procstat.CPU(srv.pid) - cpu0
			*machine += procstat.MachineCPU() - m0
			if wall != nil {
				*wall += time.Since(t0)
			}
		}
		idleHalf := func() {
			phase(&idleServerCPU, &idleMachine, &idleWall, func() {
				idle = append(idle, l.run(b, clients, listIdleRequests/2, nil)...)
			})
		}
		idleHalf()
		phase(&busyServerCPU, &busyMachine, nil, func() {
			cmd := exec.Command(cli, "backup", "create", "--to", to)
			cmd.Env = cliEnv
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			done := make(chan struct{})
			var wg sync.WaitGroup
			began := time.Now()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			wg.Go(func() { l.run(b, clients, 0, done) })
			err := cmd.Wait()
			ended := time.Now()
			close(done)
			wg.Wait()
			if err != nil {
				b.Fatalf("lightbox backup create: %v\n%s", err, out.Bytes())
			}
			want := fmt.Sprintf("files: %d, %d copied", files, files)
			if !bytes.Contains(out.Bytes(), []byte(want)) {
				b.Fatalf("lightbox backup create printed %s\nwant %q", out.Bytes(), want)
			}
			backupCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			// The dump, written first, ends where the files begin.
			dumps, _ := filepath.Glob(filepath.Join(to, "backups", "*", "db.dump"))
			if len(dumps) != 1 {
				b.Fatalf("%d dumps in the backup, want 1", len(dumps))
			}
			st, err := os.Stat(dumps[0])
			if err != nil {
				b.Fatal(err)
			}
			dumped := st.ModTime()
			backupTime += ended.Sub(began)
			dumpTime += dumped.Sub(began)
			during = append(during, l.since(began, ended)...)
			dumping = append(dumping, l.since(began, dumped)...)
			copying = append(copying, l.since(dumped, ended)...)
		})
		idleHalf()
	}
	b.StopTimer()
	if len(during) < 20 {
		b.Fatalf("only %d requests were answered during the backup", len(during))
	}
	n := float64(b.N)
	b.ReportMetric(ms(percentile(idle, 50)), "idle_p50_ms")
	b.ReportMetric(ms(percentile(idle, 99)), "idle_p99_ms")
	b.ReportMetric(ms(percentile(during, 50)), "backup_p50_ms")
	b.ReportMetric(ms(percentile(during, 99)), "backup_p99_ms")
	b.ReportMetric(float64(percentile(during, 99))/float64(percentile(idle, 99)), "p99_x_idle")
	b.ReportMetric(backupTime.Seconds()/n, "backup_s")
	b.ReportMetric(float64(len(during))/n, "backup_requests")
	// Where the time goes: the server's CPU per request, and how many of
	// the machine's cores were busy, idle and during the backup.
	b.ReportMetric(ms(idleServerCPU)/float64(len(idle)), "idle_server_cpu_ms/req")
	b.ReportMetric(ms(busyServerCPU)/float64(len(during)), "backup_server_cpu_ms/req")
	b.ReportMetric(idleMachine.Seconds()/idleWall.Seconds(), "idle_busy_cores")
	b.ReportMetric(busyMachine.Seconds()/backupTime.Seconds(), "backup_busy_cores")
	// The backup's two parts: pg_dump, then the files.
	b.ReportMetric(dumpTime.Seconds()/n, "dump_s")
	if len(dumping) > 0 {
		b.ReportMetric(ms(percentile(dumping, 99)), "dump_p99_ms")
	}
	b.ReportMetric(ms(percentile(copying, 99)), "copy_p99_ms")
	// The backup process's CPU time, pg_dump's with it.
	b.ReportMetric(backupCPU.Seconds()/n, "backup_cpu_s")
	b.ReportMetric(seedSecs, "seed_s")
}

// listIdleRequests is how many requests measure the idle service in each
// run of BenchmarkListDuringBackup.
const listIdleRequests = 1000

// lister sends one user's grid request and keeps what it measured.
type lister struct {
	client   *http.Client
	url, key string
	items    int // how many assets each answer must list

	mu    sync.Mutex
	calls []call // every request, in the order answered
}

// call is one request: when it was sent and when its answer was read.
type call struct{ sent, answered time.Time }

// run sends requests from clients goroutines at once, each one after
// another: n in all, or with n 0 until done is closed. It returns the
// requests' latencies.
func (l *lister) run(b *testing.B, clients, n int, done <-chan struct{}) []time.Duration {
	var left atomic.Int64
	left.Store(int64(n))
	var mu sync.Mutex
	var out []time.Duration
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range clients {
		wg.Go(func() {
			for failed.Load() == nil {
				if done == nil && left.Add(-1) < 0 {
					return
				}
				if done != nil {
					select {
					case <-done:
						return
					default:
					}
				}
				c, err := l.get()
				if err != nil {
					failed.Store(&err)
					return
				}
				mu.Lock()
				out = append(out, c.answered.Sub(c.sent))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	return out
}

// since is the latencies of the requests sent at or after from and
// answered by to.
func (l *lister) since(from, to time.Time) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Duration
	for _, c := range l.calls {
		if !c.sent.Before(from) && !c.answered.After(to) {
			out = append(out, c.answered.Sub(c.sent))
		}
	}
	return out
}

// get sends one request and reads its whole answer, which must list every
// asset.
func (l *lister) get() (call, error) {
	req, err := http.NewRequest("GET", l.url, nil)
	if err != nil {
		return call{}, err
	}
	req.Header.Set("Authorization", "Bearer "+l.key)
	c := call{sent: time.Now()}
	res, err := l.client.Do(req)
	if err != nil {
		return call{}, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	c.answered = time.Now()
	if err != nil {
		return call{}, err
	}
	if res.StatusCode != http.StatusOK {
		return call{}, fmt.Errorf("GET %s: %s %s", l.url, res.Status, body[:min(300, len(body))])
	}
	var page struct{ Items []json.RawMessage }
	if err := json.Unmarshal(body, &page); err != nil || len(page.Items) != l.items {
		return call{}, fmt.Errorf("GET %s: %d items (%v), want %d", l.url, len(page.Items), err, l.items)
	}
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
	return c, nil
}

// The sizes of a stored photo's files: an original smaller than a
// camera's, to keep the run's disk use in bounds, and derivatives about
// the worker's.
const (
	storedOriginal  = 1 << 20
	storedThumbnail = 24 << 10
	storedPreview   = 256 << 10
)

// storedPhotos adds n photos to project, 100 at a time, as uploads and
// ingest leave them: the bytes in blobs first, then the rows that name
// them (uploaded, finalized, ingested with a thumbnail and a preview),
// through the store's own methods.
func storedPhotos(b *testing.B, env *testenv.Env, blobs blob.Store, owner, project uuid.UUID, n int) {
	b.Helper()
	const chunk = 100
	ctx := context.Background()
	put := func(key string, data []byte) (store.AssetFile, error) {
		info, err := blobs.Put(ctx, key, bytes.NewReader(data), int64(len(data)))
		return store.AssetFile{BlobKey: key, ContentType: "image/jpeg", ByteSize: info.Size, ChecksumSHA256: info.SHA256}, err
	}
	random := func(size int) []byte {
		data := make([]byte, size)
		rand.Read(data)
		return data
	}
	for lo := 0; lo < n; lo += chunk {
		size := min(chunk, n-lo)
		uploads := make([]testenv.Upload, size)
		outs := make([]store.IngestOutput, size)
		parallel(b, 4, size, func(i int) error {
			id := uuid.New()
			u := testenv.Upload{ID: id, Filename: fmt.Sprintf("IMG_%04d.JPG", lo+i), Data: random(storedOriginal),
				BlobKey: blob.OriginalKey(project, id)}
			if _, err := put(u.BlobKey, u.Data); err != nil {
				return err
			}
			uploads[i] = u
			captured := time.Date(2026, 5, 1, 14, 0, 0, 0, time.UTC).Add(time.Duration(lo+i) * 7 * time.Second)
			outs[i] = store.IngestOutput{AssetID: id, Width: 4000, Height: 3000, CapturedAt: &captured,
				CameraMake: "Canon", CameraModel: "EOS R6", EXIF: json.RawMessage(`{}`), Quality: json.RawMessage(`{}`),
				HashAlgorithm: "dhash", PHash: uint64(lo + i)}
			for _, d := range []struct {
				kind string
				size int
			}{{blob.KindThumbnail, storedThumbnail}, {blob.KindPreview, storedPreview}} {
				file, err := put(blob.DerivedKey(id, d.kind), random(d.size))
				if err != nil {
					return err
				}
				file.AssetID, file.Kind = id, d.kind
				outs[i].Files = append(outs[i].Files, file)
			}
			return nil
		})
		for _, a := range env.Finalize(b, owner, project, uploads...).Assets {
			if a.Status != store.AssetUploaded {
				b.Fatalf("finalize: asset %s is %s", a.AssetID, a.Status)
			}
		}
		parallel(b, 4, size, func(i int) error { return env.Store.SaveIngest(ctx, outs[i]) })
	}
}
