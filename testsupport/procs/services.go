package procs

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/lib/pq" // the Postgres driver, to see when it answers
	"github.com/redis/go-redis/v9"
)

// Redis is a private redis-server on a free loopback port, appending every
// write to its AOF (fsync always) in a folder of its own, so a test may
// restart it, flush it or kill it without touching anyone else's.
type Redis struct {
	*Proc
	URL string // database 0
	Dir string
}

// StartRedis starts a private Redis and waits until it answers PING.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not on PATH: install Debian's redis-server (make test does)")
	}
	addr := FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	r := &Redis{URL: "redis://" + addr + "/0", Dir: t.TempDir()}
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	r.Proc = Start(t, Options{Name: "redis", Argv: []string{bin, "--port", port, "--bind", "127.0.0.1",
		"--dir", r.Dir, "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "no"},
		Check: func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			return client.Ping(ctx).Err() == nil
		}})
	return r
}

// Postgres is a private PostgreSQL cluster on a free loopback port (trust
// auth, no fsync), made with initdb in a folder of its own, so a test may
// stop it for a while.
type Postgres struct {
	*Proc
	URL string // the database "postgres" as user lightbox
	Dir string
}

// StartPostgres makes a cluster with Debian's server programs (PG_BINDIR,
// or the newest /usr/lib/postgresql/*/bin) and starts it.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	bin := pgBindir(t)
	// t.TempDir's parents are private to us; when we are root the server
	// runs as postgres, which must reach its folder.
	dir, err := os.MkdirTemp("", "lightbox-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal("running as root, PostgreSQL needs the user postgres, which does not exist")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "lightbox", "--auth=trust",
		"--encoding=UTF8", "--no-locale", "--no-sync")
	initdb.Dir = "/"
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	addr := FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	p := &Postgres{URL: fmt.Sprintf("postgres://lightbox@%s/postgres?sslmode=disable", addr), Dir: dir}
	db, err := sql.Open("postgres", p.URL+"&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p.Proc = Start(t, Options{Name: "postgres", Argv: []string{filepath.Join(bin, "postgres"), "-D", data, "-p", port,
		"-c", "listen_addresses=127.0.0.1", "-k", dir, "-c", "fsync=off", "-c", "max_connections=200"},
		Credential: cred, StopSignal: syscall.SIGINT, // a fast shutdown, not waiting for clients
		Check: func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			return db.PingContext(ctx) == nil
		}})
	return p
}

func pgBindir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("PG_BINDIR"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) < version(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	t.Fatal("no PostgreSQL server programs under /usr/lib/postgresql/*/bin: install Debian's postgresql (make test does) or set PG_BINDIR")
	return ""
}

func version(bindir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return n
}
