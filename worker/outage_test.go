package worker_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"lightbox/chain"
	"lightbox/embedding"
	"lightbox/imaging"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
	"lightbox/worker"
)

// runWorkerOn runs, until the test ends, a worker like the harness's whose
// only way to Postgres is st.
func (h *harness) runWorkerOn(st *store.Store) {
	h.t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine, err := imaging.New(h.cfg.ImagingEngine, imaging.Config{MaxPixels: h.cfg.MaxPixels})
	if err != nil {
		h.t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(nil)
	ledger, err := chain.OpenFileLedger(filepath.Join(h.t.TempDir(), "ledger.jsonl"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { ledger.Close() })
	w, err := worker.New(worker.Deps{Config: h.cfg, Store: st, Blobs: h.blobs, Redis: h.env.Redis, Logger: quiet,
		Engine: engine, Embedder: embedding.Builtin{}, Flusher: &chain.Flusher{Store: st, Key: key, Ledger: ledger, Logger: quiet}})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		// A task still inside libvips when the test ends is handed back, as
		// at any stop; the test's assertions are behind it.
		switch err := <-done; {
		case errors.Is(err, worker.ErrHandlersRunning):
			h.t.Logf("worker: %v", err)
		case err != nil:
			h.t.Errorf("worker: %v", err)
		}
	})
}

// TestDatabaseOutageIsWaitedOutWithoutSpendingRetries cuts the worker off
// from Postgres while an ingest waits: each run of the task finds the
// database gone and waits for it without spending a retry, as an outage of
// the blob store already did, so no task is archived and no job ends on a
// later attempt than its work took. Before, each run during the outage
// spent a retry, a long outage archived the task, and every job of the
// fault suite's Postgres outage ran again.
func TestDatabaseOutageIsWaitedOutWithoutSpendingRetries(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1h"})
	dsn, err := url.Parse(h.env.DSN)
	if err != nil {
		t.Fatal(err)
	}
	pg := testenv.NewProxy(t, dsn.Host)
	dsn.Host = pg.Addr
	st, err := store.Open(context.Background(), dsn.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	project := h.project()
	asset := h.finalize(project, "kite.jpg", readCorpus(t, "photos/kite-2560x1600.jpg"))
	pg.Down()
	h.runWorkerOn(st)
	id := tasks.IngestID(asset)
	var info *asynq.TaskInfo
	testenv.Eventually(h.t, "the ingest to run into the outage", patience, func() bool {
		info, err = h.in.GetTaskInfo("default", id)
		return err == nil && info.LastErr != ""
	})
	if info.Retried != 0 || info.State != asynq.TaskStateRetry || !strings.Contains(info.LastErr, "the database does not answer") {
		t.Fatalf("after a run during the outage the ingest is %v with %d retries spent (last error %q); want waiting with none spent",
			info.State, info.Retried, info.LastErr)
	}

	pg.Up()
	testenv.Eventually(h.t, "the ingest to end once the database is back", patience, func() bool {
		return h.count(`SELECT count(*) FROM jobs WHERE asset_id = $1 AND type = 'asset:ingest' AND status = 'done'`, asset) == 1
	})
	var attempt int
	if err := h.env.DB.Get(&attempt, `SELECT attempt FROM jobs WHERE asset_id = $1 AND type = 'asset:ingest'`, asset); err != nil {
		t.Fatal(err)
	}
	if attempt != 1 {
		t.Errorf("the ingest ended on attempt %d, want 1: the outage spent its retries", attempt)
	}
}
