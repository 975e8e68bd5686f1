// Package testenv provides tests with the real Postgres and Redis that
// `make test` starts, each test isolated in its own Postgres database (a
// clone of one that holds every migration, see template.go) and its own
// Redis database index, so packages and tests run in parallel without
// seeing each other's data.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/redis/go-redis/v9"

	"lightbox/store"
)

// Env is one test's slice of the shared services.
type Env struct {
	Store    *store.Store
	DB       *sqlx.DB // the same database, for the odd check or change no store method makes
	DSN      string   // connects straight into the test's database and schema
	Schema   string   // the schema of the DSN's search_path, which holds the tables
	Redis    *redis.Client
	RedisURL string // names the test's own database index
	RedisDB  int
}

// New gives t its own Postgres and Redis databases, removed when t ends.
func New(t testing.TB) *Env {
	t.Helper()
	e := &Env{}
	e.Store, e.DB, e.DSN, e.Schema = newSchema(t)
	e.Redis, e.RedisURL, e.RedisDB = newRedis(t)
	return e
}

func need(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run the tests with `make test`, which starts Postgres and Redis", name)
	}
	return v
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// newSchema gives t a database of its own, cloned from the template that
// holds every migration, and the schema in it that the DSN names.
func newSchema(t testing.TB) (*store.Store, *sqlx.DB, string, string) {
	t.Helper()
	base := need(t, "DATABASE_URL")
	ctx := context.Background()
	tmpl, err := migrated(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sqlx.Open("postgres", base)
	if err != nil {
		t.Fatal(err)
	}
	name := randomName("test_")
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" TEMPLATE "+tmpl); err != nil {
		admin.Close()
		t.Fatalf("clone the migrated database %s: %v", tmpl, err)
	}
	t.Cleanup(func() {
		// FORCE: a process the test started may not have let go yet.
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
		admin.Close()
	})

	dsn, err := withDatabase(base, name, templateSchema)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(4)
	t.Cleanup(func() { db.Close() })
	return s, db, dsn, templateSchema
}

// WithSearchPath returns dsn with every connection's search_path set to schema.
func WithSearchPath(dsn, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// newRedis hands out database indexes from a counter kept in database 0, so
// concurrent test processes never share one. The Redis that `make test`
// starts has 1024 databases.
func newRedis(t testing.TB) (*redis.Client, string, int) {
	t.Helper()
	base := need(t, "REDIS_URL")
	opt, err := redis.ParseURL(base)
	if err != nil {
		t.Fatalf("REDIS_URL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opt.DB = 0
	ctl := redis.NewClient(opt)
	defer ctl.Close()
	count := 16
	if v, err := ctl.ConfigGet(ctx, "databases").Result(); err == nil {
		if n, err := strconv.Atoi(v["databases"]); err == nil {
			count = n
		}
	}
	if count < 64 {
		t.Fatalf("the Redis at REDIS_URL has %d databases; tests need at least 64 (`make test` starts one with 1024)", count)
	}
	n, err := ctl.Incr(ctx, "lightbox:testenv:next-db").Result()
	if err != nil {
		t.Fatalf("redis: %v", err)
	}
	db := 1 + int(n%int64(count-1))

	o := *opt
	o.DB = db
	rdb := redis.NewClient(&o)
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rdb.FlushDB(context.Background())
		rdb.Close()
	})
	u, _ := url.Parse(base)
	u.Path = fmt.Sprintf("/%d", db)
	return rdb, u.String(), db
}

// Corpus returns the path of the shared test images, from LIGHTBOX_CORPUS or
// beside the repository, failing the test when they cannot be found.
func Corpus(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("LIGHTBOX_CORPUS"); dir != "" {
		return dir
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "corpus")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("test corpus not found at %s (set LIGHTBOX_CORPUS)", dir)
	}
	return dir
}

// Formats returns the path of the shared HEIC, AVIF, JPEG XL, raw and
// wide-gamut test files (from LIGHTBOX_FORMATS or beside the corpus).
func Formats(t testing.TB) string {
	t.Helper()
	return sharedDir(t, "LIGHTBOX_FORMATS", "formats")
}

// Hostile returns the path of the shared inputs crafted to hang or exhaust
// a parser (from LIGHTBOX_HOSTILE or beside the corpus).
func Hostile(t testing.TB) string {
	t.Helper()
	return sharedDir(t, "LIGHTBOX_HOSTILE", "hostile")
}

func sharedDir(t testing.TB, env, name string) string {
	t.Helper()
	if dir := os.Getenv(env); dir != "" {
		return dir
	}
	dir := filepath.Join(filepath.Dir(Corpus(t)), name)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("test files not found at %s (set %s)", dir, env)
	}
	return dir
}

// Settle collects garbage and returns the goroutine count and the live
// heap, for tests that check a piece of work leaves nothing behind.
func Settle() (goroutines int, heap uint64) {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}
