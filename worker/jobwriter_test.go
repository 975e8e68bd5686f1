package worker_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/chain"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

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
