package main_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCommandLineIsParsedBeforeConnecting runs the built binary with
// Postgres and Redis pointing at a closed loopback port: any attempt to
// connect would fail the command, so help, version and usage errors show
// that they never try.
func TestCommandLineIsParsedBeforeConnecting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	bin := filepath.Join(t.TempDir(), "lightbox")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dataDir := t.TempDir()
	lightbox := func(args ...string) (status int, stdout, stderr string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(),
			"DATABASE_URL=postgres://lightbox@127.0.0.1:1/lightbox?sslmode=disable",
			"REDIS_URL=redis://127.0.0.1:1/0",
			"DATA_DIR="+dataDir,
		)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("lightbox %q: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}

	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"users", "--help"}, {"keys", "create", "-h"}} {
		status, stdout, stderr := lightbox(args...)
		if status != 0 || !strings.HasPrefix(stdout, "usage:") || !strings.Contains(stdout, "lightbox keys revoke KEY_ID") || stderr != "" {
			t.Errorf("lightbox %q: status %d, stdout %q, stderr %q; want 0 and the usage on stdout", args, status, stdout, stderr)
		}
	}

	if status, stdout, stderr := lightbox("version"); status != 0 || !strings.HasPrefix(stdout, "lightbox ") || stderr != "" {
		t.Errorf("lightbox version: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}

	for _, c := range []struct {
		args []string
		says string
	}{
		{nil, "no command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"users"}, "users needs a subcommand"},
		{[]string{"users", "delete"}, `unknown command "users delete"`},
		{[]string{"users", "create"}, "--email is required"},
		{[]string{"users", "create", "--email"}, "flag needs an argument"},
		{[]string{"users", "create", "--email", "a@example.org", "--root"}, "flag provided but not defined: -root"},
		{[]string{"keys", "list", "--email", "a@example.org", "extra"}, `unexpected argument "extra"`},
		{[]string{"keys", "revoke"}, "missing argument"},
		{[]string{"keys", "revoke", "not-a-uuid"}, "is not a key id"},
		{[]string{"migrate", "now"}, `unexpected argument "now"`},
		{[]string{"version", "--short"}, "flag provided but not defined"},
		{[]string{"keygen"}, "missing argument"},
		{[]string{"blobs"}, "blobs needs a subcommand"},
		{[]string{"blobs", "copy"}, "--to is required"},
		{[]string{"blobs", "copy", "--to", "disk"}, "only s3 is supported"},
	} {
		status, stdout, stderr := lightbox(c.args...)
		if status != 2 || stdout != "" || !strings.Contains(stderr, c.says) || !strings.Contains(stderr, "usage:") {
			t.Errorf("lightbox %q: status %d, stdout %q, stderr %q; want 2 and %q with the usage on stderr", c.args, status, stdout, stderr, c.says)
		}
	}

	if left, _ := os.ReadDir(dataDir); len(left) > 0 {
		t.Errorf("DATA_DIR was written to: %v", left)
	}

	// The control: a command that needs the database does try it, and fails.
	if status, _, stderr := lightbox("migrate"); status != 1 || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("lightbox migrate without a database: status %d, stderr %q; want 1 naming the address", status, stderr)
	}
}
