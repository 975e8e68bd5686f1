package main_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/chain"
	"lightbox/testsupport/testenv"
)

// TestBackupAndRestore runs the built command as an operator would: a
// backup of a service with photos and an attested chain, with its
// secrets; list and verify; a restore into an empty database and
// DATA_DIR that brings back rows, files, ledger and signing key; a
// restore over data refused, then forced.
func TestBackupAndRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	const passphrase = "correct horse battery staple"
	env := testenv.New(t)
	dataDir := t.TempDir()
	backups := t.TempDir()
	from := testenv.BuildCommand(ctx, t, ".")
	from.Env = []string{"DATABASE_URL=" + env.DSN, "REDIS_URL=" + env.RedisURL, "DATA_DIR=" + dataDir,
		"CHAIN_LEDGER_URL=", "CHAIN_KEY=", "CHAIN_KEY_FILE=", "UPLOAD_SECRET=", "BLOB_BACKEND=", "LIGHTBOX_BACKUP_PASSPHRASE=" + passphrase}

	// The service: three photos on disk, attested.
	owner, project := env.Project(t)
	disk, err := blob.NewDisk(filepath.Join(dataDir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	uploads := testenv.Files(3)
	for i := range uploads {
		uploads[i].ID = uuid.New()
		key := blob.OriginalKey(project, uploads[i].ID)
		if _, err := disk.Put(ctx, key, strings.NewReader(string(uploads[i].Data)), int64(len(uploads[i].Data))); err != nil {
			t.Fatal(err)
		}
	}
	env.Finalize(t, owner, project, uploads...)
	keyFile := filepath.Join(dataDir, "chain-ed25519.key")
	if _, err := chain.GenerateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	key, err := chain.LoadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := chain.OpenFileLedger(filepath.Join(dataDir, "chain-ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	fl := &chain.Flusher{Store: env.Store, Key: key, Ledger: ledger, BatchSize: 10, Concurrency: 2, ItemTimeout: time.Minute,
		Logger: slog.New(slog.DiscardHandler)}
	if r, err := fl.Drain(ctx); err != nil || r.Attested != 3 {
		t.Fatalf("attest: %+v, %v", r, err)
	}
	ledger.Close()
	secret := make([]byte, 32)
	rand.Read(secret)
	if err := os.WriteFile(filepath.Join(dataDir, "upload-secret"), []byte(fmt.Sprintf("%x", secret)), 0o600); err != nil {
		t.Fatal(err)
	}

	run := func(c *testenv.Command, want int, args ...string) (string, string) {
		t.Helper()
		status, stdout, stderr := c.Run(args...)
		if status != want {
			t.Fatalf("lightbox %q: status %d, want %d\nstdout %s\nstderr %s", args, status, want, stdout, stderr)
		}
		return stdout, stderr
	}
	out, _ := run(from, 0, "backup", "create", "--to", backups, "--include-secrets")
	if !strings.Contains(out, "complete") || !strings.Contains(out, "files: 3, 3 copied") || !strings.Contains(out, "secrets: sealed") {
		t.Fatalf("backup create printed %q", out)
	}
	id := strings.Fields(out)[1]
	out, _ = run(from, 0, "backup", "create", "--to", backups)
	if !strings.Contains(out, "files: 3, 0 copied") || !strings.Contains(out, "3 already there") {
		t.Errorf("a second backup printed %q; want nothing copied", out)
	}
	if out, _ := run(from, 0, "backup", "list", "--from", backups); !strings.Contains(out, id) || strings.Count(out, "\n") != 3 ||
		!strings.Contains(out, "secrets") {
		t.Errorf("backup list printed %q", out)
	}
	if out, _ := run(from, 0, "backup", "verify", "--from", backups, id); !strings.Contains(out, "each as its manifest says") {
		t.Errorf("backup verify printed %q", out)
	}

	// Another machine: an empty database and DATA_DIR.
	env2 := testenv.New(t)
	dataDir2 := t.TempDir()
	to := testenv.BuildCommand(ctx, t, ".")
	to.Env = []string{"DATABASE_URL=" + env2.DSN, "REDIS_URL=" + env2.RedisURL, "DATA_DIR=" + dataDir2,
		"CHAIN_LEDGER_URL=", "CHAIN_KEY=", "CHAIN_KEY_FILE=", "UPLOAD_SECRET=", "BLOB_BACKEND=", "LIGHTBOX_BACKUP_PASSPHRASE=wrong passphrase here"}
	if _, stderr := run(to, 1, "backup", "restore", "--from", backups, "--secrets-to", dataDir2, id); !strings.Contains(stderr, "passphrase") {
		t.Errorf("a wrong passphrase: %q", stderr)
	}
	if n := env2.Count(t, `SELECT count(*) FROM assets`); n != 0 {
		t.Fatalf("a refused restore wrote %d assets", n)
	}
	to.Env = append(to.Env, "LIGHTBOX_BACKUP_PASSPHRASE="+passphrase)
	out, _ = run(to, 0, "backup", "restore", "--from", backups, "--secrets-to", dataDir2, id)
	for _, want := range []string{"restored backup " + id, "files: 3", "3 originals match", "chain: 3 attestations verified", "ledger:",
		"secret: " + filepath.Join(dataDir2, "chain-ed25519.key")} {
		if !strings.Contains(out, want) {
			t.Errorf("backup restore printed %q, without %q", out, want)
		}
	}
	if n := env2.Count(t, `SELECT count(*) FROM assets`); n != 3 {
		t.Errorf("%d assets restored", n)
	}
	for _, name := range []string{"chain-ed25519.key", "upload-secret", "chain-ledger.jsonl"} {
		a, _ := os.ReadFile(filepath.Join(dataDir, name))
		b, err := os.ReadFile(filepath.Join(dataDir2, name))
		if err != nil || strings.TrimSpace(string(a)) != strings.TrimSpace(string(b)) {
			t.Errorf("%s restored: %v, %d bytes, %d before", name, err, len(b), len(a))
		}
	}
	for _, u := range uploads {
		info, err := disk.Stat(ctx, blob.OriginalKey(project, u.ID))
		if err != nil {
			t.Fatal(err)
		}
		restored, err := os.ReadFile(filepath.Join(dataDir2, "blobs", filepath.FromSlash(blob.OriginalKey(project, u.ID))))
		if err != nil || testenv.Checksum(restored) != info.SHA256 {
			t.Errorf("original %s restored: %v", u.ID, err)
		}
	}

	// Over data: refused, saying how to insist; forced, done again.
	if _, stderr := run(to, 1, "backup", "restore", "--from", backups); !strings.Contains(stderr, "not empty") || !strings.Contains(stderr, "--force") {
		t.Errorf("a restore over data: %q", stderr)
	}
	if out, _ := run(to, 0, "backup", "restore", "--from", backups, "--force"); !strings.Contains(out, "chain: 3 attestations verified") {
		t.Errorf("a forced restore printed %q", out)
	}
	if _, stderr := run(to, 1, "backup", "restore", "--from", t.TempDir()); !strings.Contains(stderr, "no complete backup") {
		t.Errorf("a restore from an empty folder: %q", stderr)
	}

	// Keeping the newest: the first backup goes, the second still verifies.
	if out, _ := run(from, 0, "backup", "prune", "--from", backups, "--keep", "1"); !strings.Contains(out, "deleted backup "+id) ||
		!strings.Contains(out, "kept 1 complete backups") {
		t.Errorf("backup prune printed %q", out)
	}
	if out, _ := run(from, 0, "backup", "verify", "--from", backups); !strings.Contains(out, "each as its manifest says") {
		t.Errorf("backup verify after the prune printed %q", out)
	}
}

// TestBackupUsageErrors: mistakes on the command line are usage errors
// (status 2) found before anything connects.
func TestBackupUsageErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	cmd := testenv.BuildCommand(ctx, t, ".")
	cmd.Env = []string{"DATABASE_URL=postgres://lightbox@127.0.0.1:1/lightbox?sslmode=disable", "REDIS_URL=redis://127.0.0.1:1/0",
		"DATA_DIR=" + t.TempDir(), "LIGHTBOX_BACKUP_PASSPHRASE="}
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"backup"}, "backup needs a subcommand"},
		{[]string{"backup", "delete"}, `unknown command "backup delete"`},
		{[]string{"backup", "prune", "--from", dir}, "--keep must be given"},
		{[]string{"backup", "prune", "--from", dir, "--keep", "0"}, "--keep must be given, at least 1"},
		{[]string{"backup", "prune", "--from", dir, "--keep", "2", "--concurrency", "2"}, "does not take --concurrency"},
		{[]string{"backup", "list", "--from", dir, "--keep", "2"}, "does not take --keep"},
		{[]string{"backup", "create"}, "--to is required"},
		{[]string{"backup", "list"}, "--from is required"},
		{[]string{"backup", "create", "--to", "ftp://example.org/x"}, "want a folder or s3://BUCKET/PREFIX"},
		{[]string{"backup", "create", "--to", "s3://"}, "names no bucket"},
		{[]string{"backup", "create", "--to", dir, "--force"}, "does not take --force"},
		{[]string{"backup", "list", "--from", dir, "extra"}, `unexpected argument "extra"`},
		{[]string{"backup", "verify", "--from", dir, "a", "b"}, `unexpected argument "b"`},
		{[]string{"backup", "restore", "--from", dir, "--concurrency", "0"}, "--concurrency must be 1 to 64"},
		{[]string{"backup", "create", "--to", dir, "--include-secrets"}, "set LIGHTBOX_BACKUP_PASSPHRASE"},
		{[]string{"backup", "restore", "--from", dir, "--secrets-to", dir}, "set LIGHTBOX_BACKUP_PASSPHRASE"},
	} {
		status, stdout, stderr := cmd.Run(c.args...)
		if status != 2 || stdout != "" || !strings.Contains(stderr, c.says) || !strings.Contains(stderr, "usage:") {
			t.Errorf("lightbox %q: status %d, stdout %q, stderr %q; want 2 and %q with the usage", c.args, status, stdout, stderr, c.says)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("the backup folder was written to: %v", left)
	}
}
