package worker_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"lightbox/chain"
)

// buildWorker compiles the worker binary once per test run.
func buildWorker(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..")
	bin := filepath.Join(t.TempDir(), "worker")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/worker")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the worker: %v\n%s", err, out)
	}
	return bin
}

// startBinary starts the worker binary bin on the harness's services with
// the chain key in keyFile; the test's end kills it.
func (h *harness) startBinary(bin, keyFile string) *exec.Cmd {
	h.t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+h.env.DSN, "REDIS_URL="+h.env.RedisURL, "DATA_DIR="+h.cfg.DataDir,
		"CHAIN_KEY_FILE="+keyFile, "WORKER_CONCURRENCY=2", "CLUSTER_DELAY=1h", "LOG_LEVEL=error")
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

// TestKilledWorkerLosesNothing kills a worker with SIGKILL in the middle of
// 100 assets and starts another: every asset ends processed exactly once
// in the data, whatever ran twice. Asynq hands the dead worker's leased
// tasks back a minute after their lease expires (asynq's recoverer allows
// for clock skew), so this test waits that long: it runs beside the others.
func TestKilledWorkerLosesNothing(t *testing.T) {
	// Most of its time goes on waiting for the leases: other tests use it.
	t.Parallel()
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1h"})
	project := h.project()
	photos := []string{"kite-2560x1600.jpg", "path-2560x1600.jpg", "fallenleaf-2560x1600.jpg", "coldripple-2560x1600.jpg", "bythewater-2560x1600.jpg"}
	for i := range 100 {
		data := readCorpus(t, "photos/"+photos[i%len(photos)])
		h.finalize(project, fmt.Sprintf("%03d.jpg", i), append(data, []byte(fmt.Sprintf("copy %d", i))...))
	}
	keyFile := filepath.Join(t.TempDir(), "chain.key")
	if _, err := chain.GenerateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	bin := buildWorker(t)
	start := func() *exec.Cmd { return h.startBinary(bin, keyFile) }
	culled := func() int {
		return h.count(`SELECT count(*) FROM assets WHERE status IN ('cull', 'search', 'ai')`)
	}

	first := start()
	h.waitFor("the first worker to process some assets", 5*time.Minute, func() bool { return culled() >= 10 })
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
	h.waitFor("every ingest to end after the kill", 6*time.Minute, func() bool {
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
