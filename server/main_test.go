package server_test

import (
	"cmp"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"lightbox/blob"
	"lightbox/cmd/boot"
	"lightbox/config"
	"lightbox/embedding"
	"lightbox/server"
	"lightbox/testsupport/testenv"
)

func TestMain(m *testing.M) {
	// Most tests wait on round trips to Postgres and Redis rather than
	// compute, so four run at once rather than two. Those that measure the
	// server's latency or memory do not call t.Parallel: they run before
	// the others, alone.
	testenv.Parallel(4)
	os.Exit(m.Run())
}

// app is a running API on real Postgres and Redis, for one test.
type app struct {
	t     testing.TB
	env   *testenv.Env
	cfg   *config.Config
	url   string
	blobs *blob.Disk
	// handler is the server's own, before the answers are checked.
	handler http.Handler
	srv     *server.Server
	// chainKey signs the chain the server verifies.
	chainKey ed25519.PrivateKey
}

const testEmbedModel = "test-model"

func newApp(t testing.TB) *app {
	t.Helper()
	env := testenv.New(t)
	return startApp(t, env, env.Redis)
}

const testUploadSecret = "test-secret-0123456789abcdef0123456789"

// options adjust one app's environment and wiring.
type options struct {
	env      map[string]string
	queueURL string // Redis the queue client talks to; the test's own by default
	dataDir  string // blob folder shared by apps that stand for one deployment
	logTo    io.Writer
	signer   blob.URLSigner // the disk backend's, leading to this app, by default
	store    blob.Store     // the disk backend under dataDir by default
	texts    embedding.TextEmbedder
	model    string                          // the embedding model /similar compares; testEmbedModel by default
	now      func() time.Time                // the sign-in throttle's clock; time.Now by default
	queue    *asynq.Client                   // the server's queue client; one on queueURL by default
	wrap     func(http.Handler) http.Handler // around the server's handler, inside the answer checks
}

// newChainKey is a new chain signing key as CHAIN_KEY takes it.
func newChainKey(t testing.TB) string {
	_, key, _ := ed25519.GenerateKey(nil)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

func startApp(t testing.TB, env *testenv.Env, rdb *redis.Client) *app {
	return startAppWith(t, env, rdb, options{})
}

func startAppWith(t testing.TB, env *testenv.Env, rdb *redis.Client, o options) *app {
	t.Helper()
	// The handler is set once the config, which needs the URL, exists.
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	if o.dataDir == "" {
		o.dataDir = t.TempDir()
	}
	vars := map[string]string{
		"DATABASE_URL":  env.DSN,
		"REDIS_URL":     env.RedisURL,
		"DATA_DIR":      o.dataDir,
		"PUBLIC_URL":    ts.URL,
		"UPLOAD_SECRET": testUploadSecret,
		"CHAIN_KEY":     newChainKey(t),
	}
	for k, v := range o.env {
		vars[k] = v
	}
	cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if o.queueURL == "" {
		o.queueURL = env.RedisURL
	}
	queueOpt, err := asynq.ParseRedisURI(o.queueURL)
	if err != nil {
		t.Fatal(err)
	}
	queue := o.queue
	if queue == nil {
		queue = asynq.NewClient(queueOpt)
		t.Cleanup(func() { queue.Close() })
	}
	inspector := asynq.NewInspector(queueOpt)
	t.Cleanup(func() { inspector.Close() })
	blobs, err := blob.NewDisk(filepath.Join(o.dataDir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	if o.logTo == nil {
		o.logTo = io.Discard
	}
	quiet := slog.New(slog.NewTextHandler(o.logTo, nil))
	if o.signer == nil {
		o.signer = blob.NewSigner([]byte(testUploadSecret), ts.URL+"/blobs")
	}
	key, err := boot.ChainKey(cfg)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := boot.ChainKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Deps{
		ChainKeys: keys, EmbedModel: cmp.Or(o.model, testEmbedModel), TextEmbedder: o.texts,
		Config: cfg, Store: env.Store, Redis: rdb, Queue: queue, Inspector: inspector, Logger: quiet,
		Blobs: cmp.Or[blob.Store](o.store, blobs), Signer: o.signer, Now: o.now,
	})
	h := srv.Handler()
	if o.wrap != nil {
		h = o.wrap(h)
	}
	// Every answer is checked against openapi.yaml, so it cannot drift.
	handler = conforming(t, h)
	return &app{t: t, env: env, cfg: cfg, url: ts.URL, blobs: blobs, handler: srv.Handler(), srv: srv, chainKey: key}
}

// appWithEnv starts an app with settings given as name, value pairs.
func appWithEnv(t *testing.T, vars ...string) *app {
	env := testenv.New(t)
	o := options{env: map[string]string{}}
	for i := 0; i+1 < len(vars); i += 2 {
		o.env[vars[i]] = vars[i+1]
	}
	return startAppWith(t, env, env.Redis, o)
}

// s3AppOn is an app whose blobs live in bucket.
func s3AppOn(t testing.TB, bucket blob.S3Config, vars map[string]string) (*app, *blob.S3) {
	t.Helper()
	s3, err := blob.NewS3(bucket)
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.New(t)
	return startAppWith(t, env, env.Redis, options{env: vars, store: s3, signer: s3}), s3
}

const testMetricsToken = "metrics-token-0123456789"
