package sdk_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"lightbox/testsupport/procs"
	"lightbox/testsupport/testenv"
)

// patience bounds each wait; it only catches a hang on two busy cores.
const patience = 10 * time.Minute

// TestContract checks src/types.ts against server/openapi.yaml both ways
// (test/contract.test.mjs).
func TestContract(t *testing.T) {
	node(t)
	run(t, ".", nil, "node", "--test", "--test-reporter=spec", "test/contract.test.mjs")
}

// TestOpenAPIYAMLLints runs Redocly's lint, as the ecosystem's tools read
// an OpenAPI document, on server/openapi.yaml itself (the server serves
// it as JSON, which forgives what YAML parsers refuse): no error, and
// nothing sent anywhere.
func TestOpenAPIYAMLLints(t *testing.T) {
	node(t)
	run(t, ".", map[string]string{"REDOCLY_TELEMETRY": "off", "REDOCLY_SDK_TELEMETRY": "off",
		"REDOCLY_SUPPRESS_UPDATE_NOTICE": "true", "REDOCLY_SUPPRESS_NOTIFICATIONS": "true"},
		filepath.Join("node_modules", ".bin", "redocly"), "lint", "--format=stylish", filepath.Join("..", "server", "openapi.yaml"))
}

// TestAgainstServer packs the SDK, installs the tarball into an empty app,
// starts a server and a worker, and runs the app's tests (test/*.mjs,
// and every example of README.md) against them.
func TestAgainstServer(t *testing.T) {
	node(t)
	app := installPacked(t)

	env := testenv.New(t)
	smtpURL, mails := testenv.SMTP(t)
	stack := procs.NewStack(t, env.DSN, env.RedisURL)
	stack.Shared["SMTP_URL"] = smtpURL
	stack.Shared["MAIL_FROM"] = "Lightbox <no-reply@example.org>"
	srv := stack.AddServer(nil)
	stack.AddWorker(nil)

	ctx := context.Background()
	emails := []string{"ana@example.org", "bea@example.org", "cai@example.org"}
	var apiKey string
	for i, email := range emails {
		u, err := env.Store.CreateUser(ctx, email, false)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if apiKey, _, err = env.Store.CreateAPIKey(ctx, u.ID, "sdk test"); err != nil {
				t.Fatal(err)
			}
		}
	}
	box := newMailbox(t, mails)
	vars := map[string]string{
		"KILO_BASE_URL": srv.URL + "/v1",
		"KILO_API_KEY":  apiKey,
		"KILO_EMAILS":   strings.Join(emails, ","),
		"KILO_MAILBOX":  box,
		"KILO_CORPUS":   testenv.Corpus(t),
	}
	files, _ := filepath.Glob(filepath.Join(app, "test", "*.test.mjs"))
	args := append([]string{"--test", "--test-reporter=spec", "--test-concurrency=1"}, files...)
	run(t, app, vars, "node", args...)
}

// node fails t unless Node.js 20 or newer and the SDK's dev tools are
// installed (scripts/sdk-deps.sh, which make test runs, installs them).
func node(t *testing.T) {
	t.Helper()
	out, err := exec.Command("node", "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("the SDK's tests need Node.js 20 or newer: %v (scripts/sdk-deps.sh installs it)", err)
	}
	if major, _ := strconv.Atoi(strings.Split(strings.TrimSpace(string(out)), ".")[0]); major < 20 {
		t.Fatalf("the SDK's tests need Node.js 20 or newer, not %s", out)
	}
	if _, err := os.Stat(filepath.Join("node_modules", "typescript", "package.json")); err != nil {
		t.Fatal("sdk/node_modules lacks TypeScript: run scripts/sdk-deps.sh (make test does)")
	}
}

// installPacked builds the tarball npm pack makes and installs it, as a
// user of the package would, into an empty app; it returns the app's
// folder, holding a copy of test/ and the README.
func installPacked(t *testing.T) string {
	t.Helper()
	packs := t.TempDir()
	run(t, ".", nil, "npm", "pack", "--silent", "--pack-destination", packs)
	tgz, _ := filepath.Glob(filepath.Join(packs, "kilo-sdk-*.tgz"))
	if len(tgz) != 1 {
		t.Fatalf("npm pack made %v", tgz)
	}
	app := t.TempDir()
	write(t, filepath.Join(app, "package.json"), `{"name": "sdk-test-app", "private": true, "type": "module"}`)
	// The package has no dependencies: nothing comes from the registry.
	run(t, app, nil, "npm", "install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", tgz[0])
	// TypeScript and Node's types, from the SDK's own dev tools,
	// type-check the README's examples against the installed package's
	// declarations.
	for _, tool := range []string{"typescript", "@types", "undici-types"} {
		if err := os.Symlink(filepath.Join(cwd(t), "node_modules", tool), filepath.Join(app, "node_modules", tool)); err != nil {
			t.Fatal(err)
		}
	}
	copyTree(t, filepath.Join(cwd(t), "README.md"), filepath.Join(app, "README.md"))
	copyTree(t, filepath.Join(cwd(t), "test", "server"), filepath.Join(app, "test"))
	return app
}

// newMailbox serves the sign-in codes mailed to the test's SMTP listener:
// GET /code?to=ADDRESS waits for the next one to that address.
func newMailbox(t *testing.T, mails <-chan testenv.Mail) string {
	t.Helper()
	var mu sync.Mutex
	arrived := sync.NewCond(&mu)
	codes := map[string][]string{}
	go func() {
		pattern := regexp.MustCompile(`sign-in code is (\d{6})\.`)
		for m := range mails {
			code := pattern.FindStringSubmatch(m.Data)
			if code == nil || len(m.To) != 1 {
				continue
			}
			mu.Lock()
			codes[m.To[0]] = append(codes[m.To[0]], code[1])
			arrived.Broadcast()
			mu.Unlock()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to := r.URL.Query().Get("to")
		deadline := time.AfterFunc(patience, func() { mu.Lock(); arrived.Broadcast(); mu.Unlock() })
		defer deadline.Stop()
		start := time.Now()
		mu.Lock()
		defer mu.Unlock()
		for len(codes[to]) == 0 {
			if time.Since(start) >= patience {
				http.Error(w, "no code mailed to "+to, http.StatusGatewayTimeout)
				return
			}
			arrived.Wait()
		}
		code := codes[to][0]
		codes[to] = codes[to][1:]
		io.WriteString(w, code)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// run runs a command in dir with vars added to the environment, showing
// its output as it comes; a failure fails t.
func run(t *testing.T, dir string, vars map[string]string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		t.Log(lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
}

func cwd(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies a file or a folder of files.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(fmt.Errorf("copy %s: %w", from, err))
	}
}
