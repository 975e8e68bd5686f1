package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Linking a command takes seconds of a busy machine's two cores, and the
// tests of several packages run the same three, so each is built once per
// state of its sources into a folder shared by every test process:
// test-bin/ in the user's cache folder, beside Go's own build cache. The
// key is the build IDs `go list -export` reports for the command and every
// package it imports: Go's own notion of what changed (sources, embedded
// files, cgo flags, the toolchain).

// binaryMaxAge is how long a cached command is kept after its last use.
const binaryMaxAge = 24 * time.Hour

var binaries sync.Map // import path → *built

type built struct {
	once sync.Once
	path string
	err  error
}

// Binary is the path of the main package pkg (a path go build takes, as
// seen from the test's folder, such as "../cmd/lightbox"), built without
// -race the first time any test of this run or an earlier one asks for
// the same sources.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, out)
	}
	v, _ := binaries.LoadOrStore(strings.TrimSpace(string(out)), &built{})
	b := v.(*built)
	b.once.Do(func() { b.path, b.err = buildCached(pkg) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func buildCached(pkg string) (string, error) {
	ids, err := exec.Command("go", "list", "-deps", "-export", "-f", "{{.ImportPath}} {{.BuildID}}", pkg).Output()
	if err != nil {
		return "", fmt.Errorf("go list -export %s: %w%s", pkg, err, stderrOf(err))
	}
	lines := strings.Split(strings.TrimSpace(string(ids)), "\n")
	name := filepath.Base(strings.Fields(lines[len(lines)-1])[0]) // -deps lists pkg last
	sum := sha256.Sum256([]byte(os.Getenv("GOFLAGS") + "\n" + string(ids)))
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "lightbox", "test-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:])[:20])

	// One build at a time per command and state; the others wait, then
	// find it built.
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	now := time.Now()
	if os.Chtimes(bin, now, now) == nil {
		return bin, nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	if out, err := exec.Command("go", "build", "-o", tmp, pkg).CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	// A rename, so no one ever runs a half-written file.
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	pruneBinaries(dir, now.Add(-binaryMaxAge))
	return bin, nil
}

// pruneBinaries removes the commands last used before cutoff (and the
// leftovers of builds cut short), with their locks.
func pruneBinaries(dir string, cutoff time.Time) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(dir, e.Name()))
			os.Remove(filepath.Join(dir, e.Name()+".lock"))
		}
	}
}

func stderrOf(err error) string {
	if exit, ok := err.(*exec.ExitError); ok && len(exit.Stderr) > 0 {
		return "\n" + string(exit.Stderr)
	}
	return ""
}
