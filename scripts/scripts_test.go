// Package scripts_test checks the development scripts beside it on a copy
// of them: their own .data folder and ports, so the services every other
// test uses are never touched.
package scripts_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"lightbox/testsupport/procs"
	"lightbox/testsupport/testenv"
)

// tree is a copy of the scripts in a folder of its own, whose .data the
// postgres user can reach.
func tree(t *testing.T) string {
	t.Helper()
	root, err := os.MkdirTemp("", "lightbox-scripts-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("*.sh")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "scripts", f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func port(t *testing.T) string {
	addr := procs.FreeAddr(t)
	return addr[strings.LastIndex(addr, ":")+1:]
}

// pidIn reads the pid on the first line of path, or 0.
func pidIn(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(first))
	return pid
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// TestWithServicesStopsAlikeOnSIGTERMAndCtrlC runs scripts/with-services.sh
// around a command that never ends on its own, starting its own Redis and
// PostgreSQL, then stops it as a supervisor does (SIGTERM to the script
// alone) and as Ctrl-C does (SIGINT to its whole process group). Either
// way the command, Redis and PostgreSQL are gone soon after, and the
// script exits with the signal's status. Before, SIGTERM waited for the
// command to end by itself, with both servers running.
func TestWithServicesStopsAlikeOnSIGTERMAndCtrlC(t *testing.T) {
	for _, c := range []struct {
		name   string
		sig    syscall.Signal
		group  bool
		status int
	}{
		{"SIGTERM to the script", syscall.SIGTERM, false, 143},
		{"Ctrl-C", syscall.SIGINT, true, 130},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t)
			childPid := filepath.Join(root, "child.pid")
			cmd := exec.Command(filepath.Join(root, "scripts", "with-services.sh"),
				"sh", "-c", `echo $$ >"$0"; exec sleep 3600`, childPid)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			env := []string{"LIGHTBOX_REDIS_PORT=" + port(t), "LIGHTBOX_PG_PORT=" + port(t), "LIGHTBOX_S3_PORT=" + port(t),
				"LIGHTBOX_PG_FSYNC=off",
				// Not contacted: it keeps the script from starting an S3 server.
				"LIGHTBOX_TEST_S3_ENDPOINT=http://127.0.0.1:1", "LIGHTBOX_TEST_S3_ACCESS_KEY_ID=x", "LIGHTBOX_TEST_S3_SECRET_ACCESS_KEY=x"}
			for _, kv := range os.Environ() {
				k, _, _ := strings.Cut(kv, "=")
				if k != "REDIS_URL" && k != "DATABASE_URL" && !strings.HasPrefix(k, "LIGHTBOX_") {
					env = append(env, kv)
				}
			}
			cmd.Env = env
			out := &testenv.LockedBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()

			data := filepath.Join(root, ".data")
			redis, pg, child := 0, 0, 0
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the script's output:\n%s", out.String())
				}
				// Whatever the outcome, nothing of this test keeps running.
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				for _, pid := range []int{child, redis, pg} {
					if alive(pid) {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			testenv.Eventually(t, "the command to start", 5*time.Minute, func() bool { return pidIn(childPid) > 0 })
			child = pidIn(childPid)
			redis = pidIn(filepath.Join(data, "redis", "redis.pid"))
			pg = pidIn(filepath.Join(data, "postgres", "data", "postmaster.pid"))
			if !alive(redis) || !alive(pg) || !alive(child) {
				t.Fatalf("before the signal: redis %d alive %v, postgres %d alive %v, command %d alive %v",
					redis, alive(redis), pg, alive(pg), child, alive(child))
			}

			target := cmd.Process.Pid
			if c.group {
				target = -target
			}
			if err := syscall.Kill(target, c.sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(3 * time.Minute):
				t.Fatalf("3 minutes after %s the script still runs; redis alive %v, postgres alive %v, command alive %v",
					c.sig, alive(redis), alive(pg), alive(child))
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != c.status {
				t.Errorf("the script ended with %v, want exit status %d", err, c.status)
			}
			for name, pid := range map[string]int{"the command": child, "Redis": redis, "PostgreSQL": pg} {
				testenv.Eventually(t, fmt.Sprintf("%s (pid %d) to end after %s and the script's exit", name, pid, c.sig), time.Minute,
					func() bool { return !alive(pid) })
			}
		})
	}
}
