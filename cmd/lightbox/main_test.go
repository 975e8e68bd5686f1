package main_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/chain"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// TestCommandLineIsParsedBeforeConnecting runs the built binary with
// Postgres and Redis pointing at a closed loopback port: any attempt to
// connect would fail the command, so help, version and usage errors show
// that they never try.
func TestCommandLineIsParsedBeforeConnecting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	dataDir := t.TempDir()
	cmd := testenv.BuildCommand(ctx, t, ".")
	cmd.Env = []string{
		"DATABASE_URL=postgres://lightbox@127.0.0.1:1/lightbox?sslmode=disable",
		"REDIS_URL=redis://127.0.0.1:1/0",
		"DATA_DIR=" + dataDir,
		"LIGHTBOX_URL=", "LIGHTBOX_API_KEY=",
	}
	lightbox := cmd.Run

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
		{[]string{"users", "quota", "--bytes", "1GiB"}, "--email is required"},
		{[]string{"users", "quota", "--email", "a@example.org", "--bytes", "lots"}, `"lots" is not default, none or a limit`},
		{[]string{"users", "quota", "--email", "a@example.org", "--exports", "-1"}, `"-1" is not default, none or a limit`},
		{[]string{"keys", "revoke"}, "missing argument"},
		{[]string{"keys", "revoke", "not-a-uuid"}, "is not a key id"},
		{[]string{"migrate", "now"}, `unexpected argument "now"`},
		{[]string{"version", "--short"}, "flag provided but not defined"},
		{[]string{"keygen"}, "missing argument"},
		{[]string{"blobs"}, "blobs needs a subcommand"},
		{[]string{"blobs", "copy"}, "--to is required"},
		{[]string{"blobs", "copy", "--to", "disk"}, "only s3 is supported"},
		{[]string{"upload"}, "no files or folders given"},
		{[]string{"upload", "--new", "Trip", "--project", "9b2f6f1e-6a8e-4f43-9a37-1f0c1d6f2a10", "."}, "exactly one of --project ID and --new TITLE"},
		{[]string{"upload", "--project", "trip", "."}, `--project "trip" is not a project id`},
		{[]string{"upload", ".", "--new", "Trip", "--concurrency", "0"}, "--concurrency must be 1 to 64"},
		{[]string{"upload", "--new", "Trip", "."}, "LIGHTBOX_URL is not set"},
		{[]string{"upload", "--url", "ftp://example.org", "--new", "Trip", "."}, "is not an http:// or https:// URL"},
		{[]string{"upload", "--url", "http://127.0.0.1:1", "--new", "Trip", "."}, "LIGHTBOX_API_KEY is not set"},
	} {
		status, stdout, stderr := lightbox(c.args...)
		if status != 2 || stdout != "" || !strings.Contains(stderr, c.says) || !strings.Contains(stderr, "usage:") {
			t.Errorf("lightbox %q: status %d, stdout %q, stderr %q; want 2 and %q with the usage on stderr", c.args, status, stdout, stderr, c.says)
		}
	}

	// keygen needs no database either, and prints the public key, of a
	// key it makes or of the one already there.
	keyFile := filepath.Join(t.TempDir(), "chain.key")
	status, made, stderr := lightbox("keygen", keyFile)
	if status != 0 || !strings.Contains(stderr, "wrote a new chain signing key") {
		t.Errorf("lightbox keygen: status %d, stderr %q", status, stderr)
	}
	key, err := chain.LoadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pub := hex.EncodeToString(key.Public().(ed25519.PublicKey)) + "\n"
	if status, again, stderr := lightbox("keygen", keyFile); made != pub || again != pub || status != 0 || stderr != "" {
		t.Errorf("lightbox keygen printed %q, then %q (status %d, stderr %q); want the public key %q both times", made, again, status, stderr, pub)
	}

	if left, _ := os.ReadDir(dataDir); len(left) > 0 {
		t.Errorf("DATA_DIR was written to: %v", left)
	}

	// The control: a command that needs the database does try it, and fails.
	if status, _, stderr := lightbox("migrate"); status != 1 || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("lightbox migrate without a database: status %d, stderr %q; want 1 naming the address", status, stderr)
	}
}

// TestUserQuotas sets and shows a user's own quota limits with
// `lightbox users quota`, as the server then reads them.
func TestUserQuotas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	env := testenv.New(t)
	cmd := testenv.BuildCommand(ctx, t, ".")
	cmd.Env = []string{"DATABASE_URL=" + env.DSN, "REDIS_URL=" + env.RedisURL, "DATA_DIR=" + t.TempDir()}
	lightbox := func(args ...string) string {
		t.Helper()
		status, stdout, stderr := cmd.Run(args...)
		if status != 0 {
			t.Fatalf("lightbox %q: status %d, stderr %q", args, status, stderr)
		}
		return stdout
	}
	lightbox("users", "create", "--email", "ana@example.org")
	table := func(out string) [][]string {
		var rows [][]string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			rows = append(rows, strings.Fields(line))
		}
		return rows
	}
	want := func(out string, limits ...string) {
		t.Helper()
		rows := table(out)
		if len(rows) != 3 {
			t.Fatalf("printed %q", out)
		}
		for i, name := range []string{"bytes", "files-in-flight", "exports"} {
			if rows[i][0] != name || rows[i][1] != limits[i] || rows[i][2] != "0" {
				t.Errorf("row %q, want %s %s 0 (all of %q)", rows[i], name, limits[i], out)
			}
		}
	}
	want(lightbox("users", "quota", "--email", "ana@example.org"), "default", "default", "default")
	want(lightbox("users", "quota", "--email", "ana@example.org", "--bytes", "2GiB", "--exports", "none"), "2147483648", "default", "none")
	// Setting one leaves the others as they were.
	want(lightbox("users", "quota", "--email", "ana@example.org", "--files-in-flight", "300"), "2147483648", "300", "none")
	want(lightbox("users", "quota", "--email", "ana@example.org", "--bytes", "default"), "default", "300", "none")

	u, err := env.Store.UserByEmail(ctx, "ana@example.org")
	if err != nil {
		t.Fatal(err)
	}
	usage, err := env.Store.Usage(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if usage.QuotaBytes != nil || usage.QuotaFilesInFlight == nil || *usage.QuotaFilesInFlight != 300 ||
		usage.QuotaExports == nil || *usage.QuotaExports != 0 {
		t.Fatalf("stored limits %v %v %v", usage.QuotaBytes, usage.QuotaFilesInFlight, usage.QuotaExports)
	}
	if status, _, stderr := cmd.Run("users", "quota", "--email", "nobody@example.org"); status != 1 || !strings.Contains(stderr, "nobody@example.org") {
		t.Errorf("an unknown user: status %d, stderr %q", status, stderr)
	}
}

// TestBlobsOrphans: objects no row names are listed once they are old
// enough, and --delete hands them to the sweep as discards; named ones,
// ones the sweep already knows and fresh ones are never listed.
func TestBlobsOrphans(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	env := testenv.New(t)
	dataDir := t.TempDir()
	cmd := testenv.BuildCommand(ctx, t, ".")
	cmd.Env = []string{"DATABASE_URL=" + env.DSN, "REDIS_URL=" + env.RedisURL, "DATA_DIR=" + dataDir}

	_, project := env.Project(t)
	named := env.Upload(t, project, testenv.Upload{Data: []byte("kept")})[0]
	discarded := "derived/" + uuid.NewString() + "/preview.jpg"
	if err := env.Store.DiscardAfter(ctx, []string{discarded}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	lostOriginal := "originals/" + project.String() + "/" + uuid.NewString()
	lostPreview := "derived/" + uuid.NewString() + "/preview.jpg"
	fresh := "derived/" + uuid.NewString() + "/thumbnail.jpg"
	old := time.Now().Add(-48 * time.Hour)
	for _, key := range []string{"originals/" + project.String() + "/" + named.String(), discarded, lostOriginal, lostPreview, fresh} {
		path := filepath.Join(dataDir, "blobs", filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("12345"), 0o644); err != nil {
			t.Fatal(err)
		}
		if key != fresh {
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	lightbox := func(args ...string) []string {
		t.Helper()
		status, stdout, stderr := cmd.Run(args...)
		if status != 0 {
			t.Fatalf("lightbox %q: status %d, stderr %q", args, status, stderr)
		}
		return strings.Split(strings.TrimSpace(stdout), "\n")
	}
	orphans := []string{lostPreview, lostOriginal}
	slices.Sort(orphans) // listed in key order
	want := []string{orphans[0] + "\t5", orphans[1] + "\t5"}
	lines := lightbox("blobs", "orphans")
	if !slices.Equal(lines[:len(lines)-1], want) ||
		!strings.HasPrefix(lines[len(lines)-1], "5 objects, 4 written before ") || !strings.Contains(lines[len(lines)-1], "2 named by no record (10 bytes)") {
		t.Fatalf("orphans listed:\n%s\nwant %q and a summary", strings.Join(lines, "\n"), want)
	}
	var discards int
	if err := env.DB.Get(&discards, `SELECT count(*) FROM blob_discards`); err != nil || discards != 1 {
		t.Fatalf("%d discards after a listing without --delete (%v), want only the one there before", discards, err)
	}

	lines = lightbox("blobs", "orphans", "--delete")
	if !slices.Equal(lines[:len(lines)-1], want) || !strings.HasSuffix(lines[len(lines)-1], "recorded for the worker's next sweep to delete") {
		t.Fatalf("orphans with --delete:\n%s", strings.Join(lines, "\n"))
	}
	due, err := env.Store.DueDiscards(ctx, time.Now().Add(-5*time.Minute), 10)
	slices.Sort(due)
	if err != nil || !slices.Equal(due, orphans) {
		t.Fatalf("discards the sweep would take now: %q, %v; want the two orphans", due, err)
	}
	if lines = lightbox("blobs", "orphans"); len(lines) != 1 || !strings.Contains(lines[0], "0 named by no record") {
		t.Fatalf("orphans after --delete:\n%s\nwant none: the sweep has them", strings.Join(lines, "\n"))
	}

	if status, _, stderr := cmd.Run("blobs", "orphans", "--older-than", "10m"); status != 2 || !strings.Contains(stderr, "at least 1h") {
		t.Errorf("--older-than 10m: status %d, stderr %q; want a usage error", status, stderr)
	}
}

// TestMigrateDryRun: `lightbox migrate --dry-run` lists the migrations a
// database two behind would get, applying none; says it is up to date
// once `lightbox migrate` has run; and, like `lightbox migrate` (which
// starts as the server and worker do), refuses a schema a later release
// made, naming the release to run.
func TestMigrateDryRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	env := testenv.New(t)
	cmd := testenv.BuildCommand(ctx, t, ".")
	cmd.Env = []string{"DATABASE_URL=" + env.DSN, "REDIS_URL=" + env.RedisURL, "DATA_DIR=" + t.TempDir()}
	all, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.DB.ExecContext(ctx, "DROP SCHEMA "+env.Schema+" CASCADE; CREATE SCHEMA "+env.Schema); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.MigrateTo(ctx, nil, all[len(all)-3].Version); err != nil {
		t.Fatal(err)
	}
	applied := func() int { return env.Count(t, `SELECT count(*) FROM schema_migrations`) }

	var want strings.Builder
	for _, m := range all[len(all)-2:] {
		fmt.Fprintf(&want, "%d\t%s\n", m.Version, m.Name)
	}
	if status, stdout, stderr := cmd.Run("migrate", "--dry-run"); status != 0 || stdout != want.String() || stderr != "" {
		t.Fatalf("lightbox migrate --dry-run: status %d, stdout %q, stderr %q; want %q", status, stdout, stderr, want.String())
	}
	if n := applied(); n != len(all)-2 {
		t.Fatalf("%d migrations recorded after the dry run, want the %d there before", n, len(all)-2)
	}

	if status, _, stderr := cmd.Run("migrate"); status != 0 {
		t.Fatalf("lightbox migrate: status %d, stderr %q", status, stderr)
	}
	newest := all[len(all)-1]
	upToDate := fmt.Sprintf("up to date (version %d)\n", newest.Version)
	if status, stdout, stderr := cmd.Run("migrate", "--dry-run"); status != 0 || stdout != upToDate || stderr != "" {
		t.Fatalf("lightbox migrate --dry-run once migrated: status %d, stdout %q, stderr %q; want %q", status, stdout, stderr, upToDate)
	}

	later := newest.Version + 1
	if _, err := env.DB.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`,
		later, fmt.Sprintf("%04d_from_a_later_release.sql", later)); err != nil {
		t.Fatal(err)
	}
	says := fmt.Sprintf("database schema is at version %d (%04d_from_a_later_release.sql), but this Lightbox knows migrations only up to %d: "+
		"run a Lightbox built with migration %d or newer", later, later, newest.Version, later)
	for _, args := range [][]string{{"migrate", "--dry-run"}, {"migrate"}} {
		if status, stdout, stderr := cmd.Run(args...); status != 1 || stdout != "" || !strings.Contains(stderr, says) {
			t.Errorf("lightbox %q on a newer schema: status %d, stdout %q, stderr %q; want 1 and %q", args, status, stdout, stderr, says)
		}
	}

	if status, _, stderr := cmd.Run("migrate", "--dry-run", "now"); status != 2 || !strings.Contains(stderr, `unexpected argument "now"`) {
		t.Errorf("lightbox migrate --dry-run now: status %d, stderr %q; want a usage error", status, stderr)
	}
}
