package testenv

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
)

// Command is a binary built from this module for a test, run as a person
// would run it.
type Command struct {
	t   testing.TB
	ctx context.Context
	bin string
	// Env is added to the test process's environment on every run.
	Env []string
}

// BuildCommand is the main package pkg (a path go build takes, such as
// "../cmd/lightbox"), built once for every test that asks (see Binary).
// ctx bounds every run.
func BuildCommand(ctx context.Context, t testing.TB, pkg string) *Command {
	t.Helper()
	return &Command{t: t, ctx: ctx, bin: Binary(t, pkg)}
}

// Run runs the binary with args and returns its exit status and output.
func (c *Command) Run(args ...string) (status int, stdout, stderr string) {
	c.t.Helper()
	cmd := exec.CommandContext(c.ctx, c.bin, args...)
	cmd.Env = append(cmd.Environ(), c.Env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		c.t.Fatalf("%s %q: %v", filepath.Base(c.bin), args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}
