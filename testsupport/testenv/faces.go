package testenv

import (
	"bufio"
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// FaceService is the face sidecar (faces/sidecar/server.js) run by one test.
type FaceService struct {
	// URL is where it listens, e.g. http://127.0.0.1:41234; the faces
	// endpoint is URL + "/v1/faces".
	URL string
	// Secret is its ML_SECRET, which callers send as their FACES_SECRET.
	Secret string
	cmd    *exec.Cmd
	done   chan struct{}
	log    *LockedBuffer
}

// mlDir is the sidecar's folder in this repository.
func mlDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "faces", "sidecar")
}

// FaceDemo is the folder of the six group photos that @vladmandic/face-api
// ships in its demo/ (22 faces), installed in faces/sidecar/node_modules: tests read
// them there, since their licence does not let us copy them.
func FaceDemo(t testing.TB) string {
	t.Helper()
	needML(t)
	return filepath.Join(mlDir(), "node_modules", "@vladmandic", "face-api", "demo")
}

// needML skips t when Node.js 20 or newer is not installed and fails it
// when the sidecar's packages are not.
func needML(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH: the face sidecar's tests need Node.js 20 or newer with npm")
	}
	out, err := exec.Command("node", "-p", "process.versions.node").Output()
	v := strings.TrimSpace(string(out))
	if major, _ := strconv.Atoi(strings.Split(v, ".")[0]); err != nil || major < 20 {
		t.Skipf("node %q is too old or does not run (%v): the face sidecar's tests need Node.js 20 or newer", v, err)
	}
	if _, err := os.Stat(filepath.Join(mlDir(), "node_modules", "@vladmandic", "human", "package.json")); err != nil {
		t.Fatalf("the face sidecar's packages are not installed in faces/sidecar/node_modules: run scripts/ml-deps.sh (make test does)")
	}
}

// faceTurn lets the tests of one process run face sidecars one test at a
// time: each sidecar loads its models (some 300 MB) and detects on every
// core, and five tests' sidecars at once on two busy cores made each so
// slow that their waits ran out. A test starting a second sidecar (one
// that replaces a killed one) already holds the turn.
var faceTurn = struct {
	sync.Mutex
	holder testing.TB
	free   chan struct{}
}{free: make(chan struct{}, 1)}

// takeFaceTurn waits for t's turn to run face sidecars, held until t ends.
func takeFaceTurn(t testing.TB) {
	faceTurn.Lock()
	held := faceTurn.holder == t
	faceTurn.Unlock()
	if held {
		return
	}
	faceTurn.free <- struct{}{}
	faceTurn.Lock()
	faceTurn.holder = t
	faceTurn.Unlock()
	t.Cleanup(func() {
		faceTurn.Lock()
		faceTurn.holder = nil
		faceTurn.Unlock()
		<-faceTurn.free
	})
}

var listening = regexp.MustCompile(`listening on (http://[0-9.]+:[0-9]+)`)

// StartFaces runs the face sidecar with node on a free loopback port and a
// secret of its own (or env's ML_SECRET), with env ("ML_WORKERS=1", ...)
// added to the test's environment, and waits, minutes at most, until its
// models are loaded. It skips t when Node is not installed. One test of a
// process at a time runs sidecars: t first waits for its turn. The sidecar
// is stopped when t ends.
func StartFaces(t testing.TB, env ...string) *FaceService {
	t.Helper()
	needML(t)
	takeFaceTurn(t)
	secret := rand.Text() + rand.Text()
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ML_SECRET="); ok {
			secret = v
		}
	}
	cmd := exec.Command("node", "server.js")
	cmd.Dir = mlDir()
	// A body has a minute to arrive here, not the 10 s of the default: a
	// machine busy with the rest of the suite can starve the sidecar's
	// event loop that long, and a cut-off is waited out as an outage. The
	// tests of the cut-off set their own.
	cmd.Env = append(os.Environ(), "ML_HOST=127.0.0.1", "ML_PORT=0", "ML_AUTH=secret", "ML_SECRET="+secret, "ML_BODY_TIMEOUT_MS=60000")
	cmd.Env = append(cmd.Env, env...)
	s := &FaceService{Secret: secret, cmd: cmd, done: make(chan struct{}), log: &LockedBuffer{}}
	cmd.Stderr = s.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the face sidecar: %v", err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	deadline := time.After(3 * time.Minute)
	select {
	case s.URL = <-urls:
	case <-s.done:
		t.Fatalf("the face sidecar exited before listening:\n%s", s.log)
	case <-deadline:
		t.Fatalf("the face sidecar did not listen within 3 minutes:\n%s", s.log)
	}
	for {
		if s.healthy() {
			return s
		}
		select {
		case <-s.done:
			t.Fatalf("the face sidecar exited while loading its models:\n%s", s.log)
		case <-deadline:
			t.Fatalf("the face sidecar did not load its models within 3 minutes:\n%s", s.log)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *FaceService) healthy() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Endpoint is the URL that receives the faces POST.
func (s *FaceService) Endpoint() string { return s.URL + "/v1/faces" }

// Log is what the sidecar wrote to its standard error so far.
func (s *FaceService) Log() string { return strings.TrimSpace(s.log.String()) }

// Stop asks the sidecar to stop and waits for it, killing it after 15 s.
func (s *FaceService) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		s.Kill()
	}
}

// Kill ends the sidecar at once, as a crash would, and waits for it.
func (s *FaceService) Kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// PID is the sidecar's process id, for benchmarks that read its CPU time
// and memory.
func (s *FaceService) PID() int { return s.cmd.Process.Pid }
