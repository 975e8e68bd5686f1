// Package procs provides tests with Lightbox's real binaries as separate
// processes: it builds cmd/server and cmd/worker once per state of the
// sources, starts them with an environment of their own (an empty
// DATA_DIR each, a free loopback port), waits until they answer, keeps
// each one's log in a file that is shown when the test fails, and kills,
// stops or restarts them. It also starts private Redis and PostgreSQL servers for tests that
// take those down.
package procs

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lightbox/testsupport/testenv"
)

// Patience bounds every wait for a process to answer. It only catches a
// hang: the tests run on two busy cores.
const Patience = 3 * time.Minute

// Binary is the path of the named command (server, worker), built from
// this module once for all the tests that ask (see testenv.Binary).
func Binary(t testing.TB, name string) string {
	t.Helper()
	return testenv.Binary(t, "lightbox/cmd/"+name)
}

// FreeAddr is a loopback host:port nothing listens on right now, for a
// process to listen on. The port comes from below the kernel's ephemeral
// range: one from inside it, free when checked, may be taken as the local
// port of any outgoing connection (the process's own to Redis, say) before
// the process binds it.
func FreeAddr(t testing.TB) string {
	t.Helper()
	const lowest = 10000
	top := ephemeralStart()
	for range 1000 {
		addr := "127.0.0.1:0"
		if top > lowest {
			addr = fmt.Sprintf("127.0.0.1:%d", lowest+rand.IntN(top-lowest))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken: another one
		}
		ln.Close()
		return ln.Addr().String()
	}
	t.Fatal("no free loopback port below the ephemeral range")
	return ""
}

// ephemeralStart is the first port of the kernel's ephemeral range, or 0
// when it cannot be read.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		return 0
	}
	return lo
}

// Proc is one running (or stopped) process.
type Proc struct {
	Name    string
	LogPath string
	// URL is where it answers HTTP: the API of a server, the /metrics
	// listener of a worker.
	URL string

	t     testing.TB
	argv  []string
	env   []string
	ready func() bool
	stop  syscall.Signal
	uid   *syscall.Credential

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	exit error // how the process last ended, once done is closed
}

// Options describe a process to start.
type Options struct {
	Name  string
	Argv  []string          // the program and its arguments
	Env   map[string]string // on top of PATH and HOME
	URL   string            // the base URL it answers on, if any
	Ready string            // a path under URL that answers 200 once it is ready
	// Check, without a Ready path, reports whether it is ready.
	Check func() bool
	// StopSignal asks it to stop (SIGTERM when zero).
	StopSignal syscall.Signal
	// Credential runs it as another user (PostgreSQL refuses root).
	Credential *syscall.Credential
}

// Start starts a process, stops it when t ends, and shows the end of its
// log if t failed. With a Ready path it waits until the process answers.
func Start(t testing.TB, o Options) *Proc {
	t.Helper()
	logDir := t.TempDir()
	p := &Proc{Name: o.Name, LogPath: filepath.Join(logDir, o.Name+".log"), URL: o.URL, t: t,
		argv: o.Argv, ready: o.Check, stop: o.StopSignal, uid: o.Credential}
	if o.Ready != "" {
		p.ready = answers(o.URL + o.Ready)
	}
	if p.stop == 0 {
		p.stop = syscall.SIGTERM
	}
	p.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range o.Env {
		p.env = append(p.env, k+"="+v)
	}
	t.Cleanup(func() {
		// A process asked to stop must stop cleanly: a crash or a hang on
		// the way out is a failure like any other.
		if err := p.Stop(); err != nil {
			t.Errorf("%s did not stop cleanly: %v", p.Name, err)
		}
		if t.Failed() {
			t.Logf("---- end of %s's log (%s)\n%s", p.Name, p.LogPath, tail(p.LogPath, 40))
		}
	})
	p.Restart()
	return p
}

// Restart starts the process again with the same settings and waits
// until it is ready; it must not be running.
func (p *Proc) Restart() {
	p.t.Helper()
	log, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	fmt.Fprintf(log, "---- %s starts at %s\n", p.Name, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = p.env, log, log
	// Its own process group, so a kill reaches what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: p.uid}
	if err := cmd.Start(); err != nil {
		log.Close()
		p.t.Fatalf("start %s: %v", p.Name, err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		log.Close()
		p.mu.Lock()
		p.exit = err
		p.mu.Unlock()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	if p.ready != nil {
		p.WaitReady()
	}
}

// WaitReady waits until the process is ready.
func (p *Proc) WaitReady() {
	p.t.Helper()
	deadline := time.Now().Add(Patience)
	for !p.ready() {
		if !p.Running() {
			p.t.Fatalf("%s exited before it was ready:\n%s", p.Name, tail(p.LogPath, 40))
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s not ready after %v:\n%s", p.Name, Patience, tail(p.LogPath, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// answers reports whether url answers 200.
func answers(url string) func() bool {
	client := &http.Client{Timeout: 5 * time.Second}
	return func() bool {
		res, err := client.Get(url)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}
}

// Running reports whether the process is alive.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// PID is the running process's id, for reading its memory and CPU time
// (procstat); 0 when it is not running.
func (p *Proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Kill ends the process with SIGKILL, as a power cut or the OOM killer
// would: nothing of it gets to clean up.
func (p *Proc) Kill() { p.signal(syscall.SIGKILL, 0) }

// Stop asks the process to stop and waits for it, killing it after a
// minute. It returns how the process ended when it was running: nil for a
// clean exit.
func (p *Proc) Stop() error { return p.signal(p.stop, time.Minute) }

func (p *Proc) signal(sig syscall.Signal, grace time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	syscall.Kill(-cmd.Process.Pid, sig)
	if grace > 0 {
		select {
		case <-done:
		case <-time.After(grace):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			return fmt.Errorf("still running %v after %v; killed", grace, sig)
		}
	}
	<-done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// Log is the process's log so far.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
