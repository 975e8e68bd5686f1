package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/lib/pq"
	"github.com/redis/go-redis/v9"

	"lightbox/app"
	"lightbox/chain"
	"lightbox/render"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// startBinary starts the worker binary bin on the harness's services with
// the chain key in keyFile and env's settings on top; the test's end kills
// it.
func (h *harness) startBinary(bin, keyFile string, env ...string) *exec.Cmd {
	h.t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+h.env.DSN, "REDIS_URL="+h.env.RedisURL, "DATA_DIR="+h.cfg.DataDir,
		"CHAIN_KEY_FILE="+keyFile, "WORKER_CONCURRENCY=2", "CLUSTER_DELAY=1h", "LOG_LEVEL=error")
	cmd.Env = append(cmd.Env, env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if h.t.Failed() {
			h.t.Logf("worker output:\n%s", out.String())
		}
	})
	return cmd
}

// chainKeyFile writes a fresh chain key for a worker binary.
func chainKeyFile(t *testing.T) string {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "chain.key")
	if _, err := chain.GenerateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	return keyFile
}

// stopBinary stops a worker binary with SIGTERM and waits for it: it must
// exit with status 0.
func stopBinary(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the stopped worker exited with %v, want status 0", err)
	}
}

// TestKilledWorkerLosesNothing kills a worker with SIGKILL in the middle of
// 100 assets and starts another: every asset ends processed exactly once
// in the data, whatever ran twice. The dead worker's leased tasks come
// back once its heartbeat has lapsed (see queuestate.HandBack).
func TestKilledWorkerLosesNothing(t *testing.T) {
	// Some of its time goes on waiting for the heartbeat: other tests use it.
	t.Parallel()
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1h"})
	project := h.project()
	photos := []string{"kite-2560x1600.jpg", "path-2560x1600.jpg", "fallenleaf-2560x1600.jpg", "coldripple-2560x1600.jpg", "bythewater-2560x1600.jpg"}
	for i := range 100 {
		data := readCorpus(t, "photos/"+photos[i%len(photos)])
		h.finalize(project, fmt.Sprintf("%03d.jpg", i), append(data, []byte(fmt.Sprintf("copy %d", i))...))
	}
	keyFile := chainKeyFile(t)
	bin := testenv.Binary(t, "lightbox/cmd/worker")
	start := func() *exec.Cmd { return h.startBinary(bin, keyFile) }
	culled := func() int {
		return h.count(`SELECT count(*) FROM assets WHERE status IN ('cull', 'search', 'ai')`)
	}

	first := start()
	testenv.Eventually(h.t, "the first worker to process some assets", patience, func() bool { return culled() >= 10 })
	if err := first.Process.Kill(); err != nil { // SIGKILL: no shutdown, leases left behind
		t.Fatal(err)
	}
	first.Wait()
	killedAt := culled()
	if killedAt >= 100 {
		t.Skip("the first worker finished everything before it was killed; nothing to recover")
	}

	start()
	// An asset whose results were saved just before the kill is already
	// cull; its task still comes back once its lease expires and must end
	// done, so wait for the jobs, not only the assets.
	testenv.Eventually(h.t, "every ingest to end after the kill", patience, func() bool {
		return culled() == 100 && h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:ingest' AND status = 'done'`) == 100
	})

	if n := h.count(`SELECT count(*) FROM asset_files WHERE kind IN ('thumbnail', 'preview')`); n != 200 {
		t.Errorf("%d derived files for 100 assets, want 200", n)
	}
	if n := h.count(`SELECT count(*) FROM perceptual_hashes`); n != 100 {
		t.Errorf("%d hashes, want 100", n)
	}
	if n := h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:ingest' AND status = 'done'`); n != 100 {
		t.Errorf("%d ingest jobs done, want 100", n)
	}
	if n := h.count(`SELECT count(*) FROM (SELECT asset_id FROM jobs GROUP BY asset_id, type HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d assets have a job recorded twice", n)
	}
	t.Logf("killed after %d of 100; the second worker finished the rest", killedAt)
}

// TestStoppedWorkerHandsBackItsTasks stops a worker with SIGTERM while its
// tasks run, with a SHUTDOWN_TIMEOUT too short for them to finish, as a
// deploy that cannot wait would. The worker exits cleanly; the tasks it
// gave up are back in the queue at once (no lease to wait out), spend no
// attempt and fail no asset; the next worker finishes them.
func TestStoppedWorkerHandsBackItsTasks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1h"})
	project := h.project()
	// The largest photo of the corpus: each ingest takes long enough to
	// be caught running.
	data := readCorpus(t, "photos/kleiber-6028x3391.jpg")
	const n = 12
	for i := range n {
		h.finalize(project, fmt.Sprintf("%02d.jpg", i), append(data, []byte(fmt.Sprintf("copy %d", i))...))
	}
	keyFile := chainKeyFile(t)
	bin := testenv.Binary(t, "lightbox/cmd/worker")
	done := func() int {
		return h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:ingest' AND status = 'done'`)
	}

	// A worker is stopped while ingests run. The state of a running job is
	// written a little after it starts, so the ones seen running may all
	// have ended by the time the stop lands, with the next not yet begun:
	// then nothing was in flight to hand back, and a worker runs again to
	// be stopped again.
	for round, handedBack := 1, 0; handedBack == 0; round++ {
		if round > 3 {
			// A stop that keeps missing every running ingest is a stop
			// that lets them finish rather than handing them back.
			t.Fatal("three stops of a worker running ingests handed none back")
		}
		first := h.startBinary(bin, keyFile, "SHUTDOWN_TIMEOUT=1ms")
		var running []uuid.UUID
		testenv.EventuallyEvery(h.t, "an ingest to run", patience, 10*time.Millisecond, func() bool {
			running = nil
			if err := h.env.DB.Select(&running, `SELECT id FROM jobs WHERE type = 'asset:ingest' AND status = 'running'`); err != nil {
				t.Fatal(err)
			}
			return len(running) > 0
		})
		stopBinary(t, first)
		if done() == n && round == 1 {
			t.Skip("the worker finished everything before it stopped; nothing was handed back")
		}
		handedBack = h.count(`SELECT count(*) FROM jobs WHERE id = ANY($1) AND status <> 'done'`, pq.Array(running))
	}
	// SIGKILL would leave the tasks active until their leases ran out.
	for _, q := range []string{tasks.QueueCritical, tasks.QueueDefault, tasks.QueueLow} {
		if info, err := h.in.GetQueueInfo(q); err == nil && info.Active > 0 {
			t.Errorf("queue %s: %d tasks still active after the worker stopped", q, info.Active)
		}
	}
	// Each task it had started is either done or back in the queue,
	// marked as handed back: none still shows running.
	var started []struct {
		Status  string `db:"status"`
		Attempt int    `db:"attempt"`
		Code    string `db:"code"`
	}
	if err := h.env.DB.Select(&started, `SELECT status, attempt, coalesce(error_code, '') AS code FROM jobs
		WHERE type = 'asset:ingest' AND status <> 'done' AND attempt > 0`); err != nil {
		t.Fatal(err)
	}
	if len(started) == 0 {
		t.Error("no unfinished ingest shows it was started: the running ones were not handed back")
	}
	for _, j := range started {
		if j.Status != "queued" || j.Attempt != 1 || j.Code != "interrupted" {
			t.Errorf("an ingest the stop interrupted shows %+v, want queued at attempt 1 with code interrupted", j)
		}
	}

	h.startBinary(bin, keyFile)
	testenv.Eventually(h.t, "every ingest to end", patience, func() bool {
		return h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:ingest' AND status IN ('done', 'failed')`) == n
	})
	if f := h.count(`SELECT count(*) FROM assets WHERE status = 'failed'`); f != 0 {
		t.Errorf("%d assets failed after a stop", f)
	}
	if k := h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:ingest' AND (status <> 'done' OR attempt <> 1)`); k != 0 {
		t.Errorf("%d ingest jobs not done at their first attempt: a stop spent an attempt", k)
	}
}

// TestStoppedWorkerHandsBackAnExport stops a worker with SIGTERM while an
// export builds on its only attempt: a stop counted as a failure would
// fail it for good. It goes back to queued, marked interrupted, and the
// next worker publishes the whole archive.
func TestStoppedWorkerHandsBackAnExport(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	for i := range 12 {
		h.readyCopy(project, "photos/kite-2560x1600.jpg", fmt.Sprintf("%02d.jpg", i))
	}
	id, task := h.newExport(project, "web", render.Settings{LongEdge: 2048, Quality: 85, IncludeNotReady: true})
	if _, err := h.queue.Enqueue(task, asynq.MaxRetry(0)); err != nil {
		t.Fatal(err)
	}
	keyFile := chainKeyFile(t)
	bin := testenv.Binary(t, "lightbox/cmd/worker")

	first := h.startBinary(bin, keyFile, "SHUTDOWN_TIMEOUT=1ms")
	testenv.Eventually(h.t, "the export to write its archive", patience, func() bool { return h.export(id).Progress > 0 })
	stopBinary(t, first)
	e := h.export(id)
	if e.Status == "done" {
		t.Skip("the export was published before the worker stopped; nothing was handed back")
	}
	if e.Status != "queued" || deref(e.ErrorCode) != "interrupted" || e.BlobKey != nil {
		t.Errorf("after the stop: export %s, code %q, file %v; want queued, interrupted, no file", e.Status, deref(e.ErrorCode), e.BlobKey)
	}

	h.startBinary(bin, keyFile)
	testenv.Eventually(h.t, "the export to end", patience, func() bool {
		s := h.export(id).Status
		return s == "done" || s == "failed"
	})
	if e := h.export(id); e.Status != "done" {
		t.Fatalf("export %s after the next worker, want done", e.Status)
	}
	if z := h.archive(id); len(z.File) != 12 {
		t.Errorf("%d entries, want 12", len(z.File))
	}
	if tmp := h.tempFiles(); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// TestStoppedWorkerHandsBackAWebhookDelivery stops a worker with SIGTERM
// while a delivery on its only attempt waits for the endpoint's answer:
// the delivery stays pending, not failed, and the next worker delivers it.
func TestStoppedWorkerHandsBackAWebhookDelivery(t *testing.T) {
	t.Parallel()
	const secret = "a-secret-of-some-length"
	arrived := make(chan struct{}, 10)
	answer := make(chan struct{})
	var answered atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		// The first request waits until the worker has stopped (it gives
		// up on it); the next is answered.
		if !answered.Swap(true) {
			select {
			case <-answer:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	defer close(answer)
	h := newHarness(t, map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32"})
	hook := h.webhook(srv.URL+"/hook", secret, app.EventBatchCompleted)
	job, err := h.app().PingWebhook(context.Background(), hook)
	if err != nil {
		t.Fatal(err)
	}
	// Its only attempt: a stop counted as a failure would fail it for good.
	queue, taskID := tasks.QueueOf(tasks.TypeWebhook), tasks.WebhookID(job.ID)
	info, err := h.in.GetTaskInfo(queue, taskID)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.in.DeleteTask(queue, taskID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.queue.Enqueue(asynq.NewTask(tasks.TypeWebhook, info.Payload), asynq.TaskID(taskID), asynq.Queue(queue), asynq.MaxRetry(0)); err != nil {
		t.Fatal(err)
	}
	keyFile := chainKeyFile(t)
	bin := testenv.Binary(t, "lightbox/cmd/worker")

	first := h.startBinary(bin, keyFile, "SHUTDOWN_TIMEOUT=1ms", "DOWNLOAD_ALLOW_NETS=127.0.0.1/32")
	select {
	case <-arrived:
	case <-time.After(5 * time.Minute):
		t.Fatal("the delivery never reached the endpoint")
	}
	stopBinary(t, first)
	if d := h.delivery(job.ID); d.Status != store.DeliveryPending || d.JobStatus != "queued" || d.JobAttempt != 1 {
		t.Errorf("after the stop: %+v, want a pending delivery and its job queued at attempt 1", d)
	}

	h.startBinary(bin, keyFile, "DOWNLOAD_ALLOW_NETS=127.0.0.1/32")
	testenv.Eventually(h.t, "the delivery to end", patience, func() bool {
		d := h.delivery(job.ID)
		return d.Status != store.DeliveryPending && d.JobStatus != "running" && d.JobStatus != "queued"
	})
	if d := h.delivery(job.ID); d.Status != store.DeliveryDone || d.JobStatus != "done" {
		t.Errorf("after the next worker: %+v, want delivered and done", d)
	}
}

// TestKilledWorkersTaskComesBackOnceItsHeartbeatIsGone kills a worker with
// SIGKILL while it downloads a photo, and runs another: the download comes
// back as soon as the dead worker's heartbeat has lapsed, still its first
// attempt, and finishes. Asynq's own recovery would have taken it back a
// minute or two later and counted a retry (attempt 2).
func TestKilledWorkersTaskComesBackOnceItsHeartbeatIsGone(t *testing.T) {
	t.Parallel()
	wood := readCorpus(t, "photos/wood.jpg")
	var requests atomic.Int32
	hold := make(chan struct{})
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			// The first worker's download hangs until it is killed.
			select {
			case <-hold:
			case <-r.Context().Done():
			}
			return
		}
		w.Write(wood)
	}))
	t.Cleanup(src.Close)
	t.Cleanup(func() { close(hold) })
	h := newHarness(t, map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32", "CLUSTER_DELAY": "1h"})
	project := h.project()
	asset := h.importURLs(project, src.URL+"/wood.jpg")[0]

	first := h.startBinary(testenv.Binary(t, "lightbox/cmd/worker"), chainKeyFile(t), "DOWNLOAD_ALLOW_NETS=127.0.0.1/32")
	testenv.Eventually(h.t, "the first worker to start the download", patience, func() bool { return requests.Load() >= 1 })
	if err := first.Process.Kill(); err != nil { // SIGKILL: its lease is left behind
		t.Fatal(err)
	}
	first.Wait()
	h.run()
	testenv.Eventually(h.t, "the photo to be downloaded and processed", patience, func() bool {
		st, _ := h.importStatus(asset)
		return st == "search" || st == "ai" || st == "failed"
	})
	var job struct {
		Status  string `db:"status"`
		Attempt int    `db:"attempt"`
	}
	if err := h.env.DB.Get(&job, `SELECT status, attempt FROM jobs WHERE type = 'asset:download'`); err != nil {
		t.Fatal(err)
	}
	if st, code := h.importStatus(asset); st == "failed" || job.Status != "done" || job.Attempt != 1 {
		t.Fatalf("asset %s (%s), download job %s on attempt %d: want processed, done on attempt 1 "+
			"(handed back when the dead worker's heartbeat lapsed, not by Asynq's lease recovery, which counts a retry)",
			st, code, job.Status, job.Attempt)
	}
}

// TestJobAWorkerEndedButNeverRecordedRunsOnceItsHeartbeatLapses: a worker
// that dies between its task's end and the write of its job's state
// leaves the row running and no task in Asynq. Once the dead worker's
// heartbeat has lapsed, a live worker runs the job again, without the
// sweep (an hour away here), which would wait for minutes of quiet.
func TestJobAWorkerEndedButNeverRecordedRunsOnceItsHeartbeatLapses(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1h", "SWEEP_INTERVAL": "1h"})
	project := h.project()
	asset, job := h.finalizeNamed(project, "kite.jpg", readCorpus(t, "photos/kite-2560x1600.jpg"))
	// The dead worker had started the job (the row says so) and its task
	// completed (Asynq keeps none); its heartbeat lapsed a moment ago.
	h.env.SetJobs(t, testenv.JobRow{Status: store.JobRunning, Attempt: 1}, "id = $1", job)
	h.env.Age(t, "jobs", "enqueued_at", 30*time.Second, "id = $1", job)
	h.env.Age(t, "jobs", "updated_at", 30*time.Second, "id = $1", job)
	if err := h.env.Redis.ZAdd(context.Background(), "asynq:servers",
		redis.Z{Score: float64(time.Now().Add(-time.Second).Unix()), Member: "asynq:servers:{dead-host:1:dead}"}).Err(); err != nil {
		t.Fatal(err)
	}
	h.run()
	testenv.Eventually(h.t, "the job to run again and end", patience, func() bool {
		return h.count(`SELECT count(*) FROM jobs WHERE id = $1 AND status = 'done'`, job) == 1
	})
	if st, _ := h.importStatus(asset); st != "search" && st != "ai" && st != "cull" {
		t.Errorf("the asset is %s", st)
	}
}

// TestJobStatesLostWithTheWorkerAreRepaired kills a worker after its task
// ended but before the job's states reached Postgres (a lock on the job's
// row holds the write back, as a slow database would), then sweeps: the
// job's task, gone from Asynq since it completed, runs again and the job
// and its batch end done, counted once.
func TestJobStatesLostWithTheWorkerAreRepaired(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1h"})
	project := h.project()
	asset := h.finalize(project, "kite.jpg", readCorpus(t, "photos/kite-2560x1600.jpg"))
	var job, batch uuid.UUID
	if err := h.env.DB.QueryRow(`SELECT id, batch_id FROM jobs WHERE asset_id = $1`, asset).Scan(&job, &batch); err != nil {
		t.Fatal(err)
	}

	lock, err := h.env.DB.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.Exec(`SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, job); err != nil {
		t.Fatal(err)
	}

	keyFile := filepath.Join(t.TempDir(), "chain.key")
	if _, err := chain.GenerateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	first := h.startBinary(testenv.Binary(t, "lightbox/cmd/worker"), keyFile)
	testenv.Eventually(h.t, "the ingest to complete in Asynq", patience, func() bool {
		_, err := h.in.GetTaskInfo("default", tasks.IngestID(asset))
		return errors.Is(err, asynq.ErrTaskNotFound) &&
			h.count(`SELECT count(*) FROM assets WHERE id = $1 AND status IN ('cull', 'search', 'ai')`, asset) == 1
	})
	if err := first.Process.Kill(); err != nil { // SIGKILL: the writer dies with what it holds
		t.Fatal(err)
	}
	first.Wait()
	lock.Rollback()
	if n := h.count(`SELECT count(*) FROM jobs WHERE id = $1 AND status = 'queued'`, job); n != 1 {
		t.Fatal("the job's states were written before the kill; nothing to repair")
	}

	// The row has been quiet long enough for the sweeper to look at it.
	h.env.Age(t, "jobs", "enqueued_at", 3*time.Minute, "id = $1", job)
	h.env.Age(t, "jobs", "updated_at", 3*time.Minute, "id = $1", job)
	h.sweep()
	h.run()
	testenv.Eventually(h.t, "the job to end done", patience, func() bool {
		return h.count(`SELECT count(*) FROM jobs WHERE id = $1 AND status = 'done' AND attempt = 1`, job) == 1
	})
	testenv.Eventually(h.t, "the batch to count it", patience, func() bool {
		return h.count(`SELECT count(*) FROM batches WHERE id = $1 AND status = 'completed' AND completed = 1 AND failed = 0`, batch) == 1
	})
	if n := h.count(`SELECT count(*) FROM asset_files WHERE asset_id = $1 AND kind IN ('thumbnail', 'preview')`, asset); n != 2 {
		t.Errorf("%d derived files after the second run, want 2", n)
	}
}
