package worker_test

import (
	"context"
	"crypto/ed25519"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/chain"
	"lightbox/config"
	"lightbox/embedding"
	"lightbox/faces"
	"lightbox/imaging"
	"lightbox/testsupport/testenv"
	"lightbox/worker"
)

func TestMain(m *testing.M) {
	// Many tests wait out an Asynq lease, a recoverer's minute or a
	// sweep, so four run at once rather than two.
	testenv.Parallel(4)
	os.Exit(m.Run())
}

// patience bounds each wait for the pipeline to reach a state. It only
// catches a hang: on two cores running the whole suite under -race, a
// dozen photos through a worker have taken past five minutes.
const patience = 15 * time.Minute

// harness is a worker on a test's own Postgres database and Redis database.
type harness struct {
	t     testing.TB
	env   *testenv.Env
	cfg   *config.Config
	w     *worker.Worker
	blobs blob.Store
	in    *asynq.Inspector
	queue *asynq.Client
	owner uuid.UUID
}

func newHarness(t testing.TB, vars map[string]string) *harness {
	t.Helper()
	return newHarnessOn(t, vars, nil)
}

// newHarnessOn is newHarness with its blobs in store, or on disk when
// store is nil.
func newHarnessOn(t testing.TB, vars map[string]string, store blob.Store) *harness {
	t.Helper()
	env := testenv.New(t)
	all := map[string]string{"DATABASE_URL": env.DSN, "REDIS_URL": env.RedisURL, "DATA_DIR": t.TempDir(), "WORKER_CONCURRENCY": "2"}
	for k, v := range vars {
		all[k] = v
	}
	cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := all[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	blobs := store
	if blobs == nil {
		if blobs, err = blob.NewDisk(cfg.DataDir + "/blobs"); err != nil {
			t.Fatal(err)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine, err := imaging.New(cfg.ImagingEngine, imaging.Config{MaxPixels: cfg.MaxPixels})
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(nil)
	ledger, err := chain.OpenFileLedger(filepath.Join(cfg.DataDir, "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ledger.Close() })
	w, err := worker.New(worker.Deps{
		Config: cfg, Store: env.Store, Blobs: blobs, Redis: env.Redis, Logger: quiet,
		Engine: engine, Embedder: embedder(t, vars), EmbedRatePerMinute: embedRate(vars),
		Faces: faceProvider(t, vars), FacesRatePerMinute: cfg.FacesRatePerMin,
		Flusher: &chain.Flusher{Store: env.Store, Key: key, Ledger: ledger, Logger: quiet},
	})
	if err != nil {
		t.Fatal(err)
	}
	opt, _ := asynq.ParseRedisURI(env.RedisURL)
	in := asynq.NewInspector(opt)
	t.Cleanup(func() { in.Close() })
	queue := asynq.NewClient(opt)
	t.Cleanup(func() { queue.Close() })
	u, err := env.Store.CreateUser(context.Background(), "ana@example.org", false)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, env: env, cfg: cfg, w: w, blobs: blobs, in: in, queue: queue, owner: u.ID}
}

func (h *harness) project() uuid.UUID {
	h.t.Helper()
	p, err := h.env.Store.CreateProject(context.Background(), h.owner, "Shoot", "", nil, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return p.ID
}

func (h *harness) exec(sql string, args ...any) {
	h.t.Helper()
	if _, err := h.env.DB.Exec(sql, args...); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) count(sql string, args ...any) int {
	h.t.Helper()
	return h.env.Count(h.t, sql, args...)
}

// embedder is the HTTP provider when the test names one, else the built-in.
func embedder(t testing.TB, vars map[string]string) embedding.Embedder {
	t.Helper()
	if vars["EMBED_URL"] == "" {
		return embedding.Builtin{}
	}
	e, err := embedding.NewHTTP(embedding.HTTPConfig{URL: vars["EMBED_URL"], Model: vars["EMBED_MODEL"], Dim: 4})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// faceProvider is the HTTP provider at the test's FACES_URL, or none.
func faceProvider(t testing.TB, vars map[string]string) faces.Provider {
	t.Helper()
	if vars["FACES_URL"] == "" {
		return nil
	}
	p, err := faces.NewHTTP(faces.HTTPConfig{URL: vars["FACES_URL"], Secret: vars["FACES_SECRET"]})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func embedRate(vars map[string]string) int {
	if vars["EMBED_URL"] == "" {
		return 0
	}
	n, _ := strconv.Atoi(vars["EMBED_RATE_PER_MINUTE"])
	return n
}
