package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"lightbox/backup"
	"lightbox/blob"
	"lightbox/cmd/boot"
	"lightbox/config"
	"lightbox/store"
)

// passphraseEnv holds the passphrase of a backup's secrets, for runs
// without a terminal to ask on.
const passphraseEnv = "LIGHTBOX_BACKUP_PASSPHRASE"

// parseBackup parses the backup subcommands.
func parseBackup(fs *flag.FlagSet, name string, args []string, getenv func(string) string, terminal bool) (command, error) {
	concurrency := fs.Int("concurrency", backup.DefaultConcurrency, "files copied at once")
	var where *string
	if name == "backup create" {
		where = fs.String("to", "", "a folder, or s3://BUCKET/PREFIX")
	} else {
		where = fs.String("from", "", "a folder, or s3://BUCKET/PREFIX")
	}
	originalsOnly := fs.Bool("originals-only", false, "only originals and sidecars")
	withSecrets := fs.Bool("include-secrets", false, "the chain's signing key and the upload secret, sealed with a passphrase")
	force := fs.Bool("force", false, "restore over a database or store that holds data")
	secretsTo := fs.String("secrets-to", "", "a folder to write the backup's secrets into")
	keep := fs.Int("keep", 0, "how many complete backups to keep, the newest")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return command{}, err
		}
		return command{}, fmt.Errorf("%s: %w", name, err)
	}
	// Flags that belong to another subcommand are refused, not ignored.
	var misplaced []string
	fs.Visit(func(f *flag.Flag) {
		allowed := map[string][]string{
			"backup create":  {"to", "concurrency", "originals-only", "include-secrets"},
			"backup list":    {"from"},
			"backup verify":  {"from", "concurrency"},
			"backup restore": {"from", "concurrency", "force", "secrets-to"},
			"backup prune":   {"from", "keep"},
		}[name]
		if !slices.Contains(allowed, f.Name) {
			misplaced = append(misplaced, "--"+f.Name)
		}
	})
	maxArgs := 1
	if name == "backup create" || name == "backup list" || name == "backup prune" {
		maxArgs = 0
	}
	switch {
	case len(misplaced) > 0:
		return command{}, fmt.Errorf("%s does not take %s", name, strings.Join(misplaced, ", "))
	case fs.NArg() > maxArgs:
		return command{}, fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(maxArgs))
	case *where == "" && name == "backup create":
		return command{}, fmt.Errorf("%s: --to is required", name)
	case *where == "":
		return command{}, fmt.Errorf("%s: --from is required", name)
	case *concurrency < 1 || *concurrency > 64:
		return command{}, fmt.Errorf("%s: --concurrency must be 1 to 64", name)
	case name == "backup prune" && *keep < 1:
		return command{}, fmt.Errorf("%s: --keep must be given, at least 1", name)
	}
	loc, err := backup.ParseLocation(*where)
	if err != nil {
		return command{}, fmt.Errorf("%s: %w", name, err)
	}
	id := fs.Arg(0)
	needPassphrase := *withSecrets || *secretsTo != ""
	passphrase := getenv(passphraseEnv)
	if needPassphrase && passphrase == "" && !terminal {
		return command{}, fmt.Errorf("%s: the secrets need a passphrase: set %s or run it in a terminal", name, passphraseEnv)
	}
	if *withSecrets && passphrase != "" && len(passphrase) < backup.MinPassphrase {
		return command{}, fmt.Errorf("%s: %s must have at least %d characters", name, passphraseEnv, backup.MinPassphrase)
	}
	// ask reads the passphrase from the terminal when it is not set.
	ask := func(stderr io.Writer, confirm bool) (string, error) {
		if !needPassphrase || passphrase != "" {
			return passphrase, nil
		}
		return askPassphrase(stderr, confirm)
	}

	run := func(ctx context.Context, _ *store.Store, stdout, stderr io.Writer) error {
		cfg, log, err := boot.Config()
		if err != nil {
			return err
		}
		tg, err := openLocation(ctx, loc, name == "backup create", getenv)
		if err != nil {
			return err
		}
		switch name {
		case "backup create":
			pass, err := ask(stderr, true)
			if err != nil {
				return err
			}
			return createBackup(ctx, cfg, tg, *originalsOnly, *withSecrets, pass, *concurrency, stdout, stderr)
		case "backup list":
			return listBackups(ctx, tg, stdout)
		case "backup verify":
			return verifyBackup(ctx, tg, id, *concurrency, stdout)
		case "backup prune":
			return pruneBackups(ctx, tg, *keep, stdout)
		default:
			pass, err := ask(stderr, false)
			if err != nil {
				return err
			}
			return restoreBackup(ctx, cfg, log, tg, id, *force, *secretsTo, pass, *concurrency, stdout, stderr)
		}
	}
	return command{run: run}, nil
}

// askPassphrase reads a passphrase on the terminal, twice for a new one.
func askPassphrase(stderr io.Writer, confirm bool) (string, error) {
	read := func(prompt string) (string, error) {
		fmt.Fprint(stderr, prompt)
		b, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(stderr)
		return string(b), err
	}
	p, err := read("passphrase for the backup's secrets: ")
	if err != nil {
		return "", err
	}
	if !confirm {
		return p, nil
	}
	if len(p) < backup.MinPassphrase {
		return "", fmt.Errorf("the passphrase must have at least %d characters", backup.MinPassphrase)
	}
	again, err := read("the same again: ")
	if err != nil {
		return "", err
	}
	if again != p {
		return "", errors.New("the passphrases differ")
	}
	return p, nil
}

// openLocation opens a backup location; a bucket is reached with the
// LIGHTBOX_BACKUP_S3_* settings where given, else the service's S3_*.
func openLocation(ctx context.Context, loc backup.Location, create bool, getenv func(string) string) (backup.Target, error) {
	var s3 blob.S3Config
	if loc.Bucket != "" {
		st, err := config.BackupS3FromLookup(func(name string) (string, bool) {
			v := getenv(name)
			return v, v != ""
		}, loc.Bucket)
		if err != nil {
			return nil, fmt.Errorf("%s is reached with the S3_* settings (or %sS3_*):\n%w", loc, config.BackupS3Prefix, err)
		}
		s3 = boot.S3(st)
	}
	return backup.OpenTarget(ctx, loc, s3, create)
}

// serviceBlobs is the service's blob store, opened without the signer of
// its URLs: the disk backend's would make an upload secret when none is
// there yet, which a restore may be about to bring back.
func serviceBlobs(ctx context.Context, cfg *config.Config) (blob.Store, error) {
	if cfg.BlobBackend == "s3" {
		s, err := blob.NewS3(boot.S3(cfg.Storage))
		if err != nil {
			return nil, err
		}
		if err := s.EnsureBucket(ctx); err != nil {
			return nil, fmt.Errorf("bucket %s at %s: %w", cfg.S3Bucket, cfg.S3Endpoint, err)
		}
		return s, nil
	}
	return blob.NewDisk(filepath.Join(cfg.DataDir, "blobs"))
}

func createBackup(ctx context.Context, cfg *config.Config, tg backup.Target, originalsOnly, withSecrets bool, passphrase string,
	concurrency int, stdout, stderr io.Writer) error {
	live, err := serviceBlobs(ctx, cfg)
	if err != nil {
		return err
	}
	o := backup.Options{DatabaseURL: cfg.DatabaseURL, Blobs: live, LedgerPath: cfg.LedgerPath(), OriginalsOnly: originalsOnly,
		Concurrency: concurrency, Lightbox: version(), PGBinDir: cfg.Backups.PGBinDir}
	if keys, err := boot.ChainKeys(cfg); err == nil {
		o.ChainKeys = &keys
	} else {
		fmt.Fprintf(stderr, "lightbox: the chain's public key is not recorded (a restore then needs CHAIN_KEY to verify it): %v\n", err)
	}
	if withSecrets {
		if o.Secrets, err = readSecrets(cfg); err != nil {
			return err
		}
		o.Passphrase = passphrase
	}
	o.Progress = func(e backup.BlobEvent) {
		if e.Done%1000 == 0 {
			fmt.Fprintf(stderr, "[%d/%d] files\n", e.Done, e.Total)
		}
	}
	start := time.Now()
	rep, err := backup.Create(ctx, tg, o)
	if err != nil {
		return fmt.Errorf("backup not taken: %w", err)
	}
	m := rep.Manifest
	fmt.Fprintf(stdout, "backup %s complete in %s (%s)\n", m.ID, tg, time.Since(start).Round(100*time.Millisecond))
	fmt.Fprintf(stdout, "database: %s, schema version %d, chain head %d\n", humanBytes(m.Database.Size), m.SchemaVersion, m.ChainHead.Seq)
	fmt.Fprintf(stdout, "files: %d, %d copied (%s), %d already there (%s)\n",
		len(m.Blobs), rep.Copied, humanBytes(rep.CopiedBytes), rep.Present, humanBytes(rep.PresentBytes))
	switch {
	case m.Ledger != nil:
		fmt.Fprintf(stdout, "ledger: %s\n", humanBytes(m.Ledger.Size))
	case cfg.ChainLedgerURL != "":
		fmt.Fprintln(stdout, "ledger: the HTTP ledger at CHAIN_LEDGER_URL keeps its own")
	}
	if m.Secrets != nil {
		fmt.Fprintln(stdout, "secrets: sealed with the passphrase")
	}
	for _, x := range m.Missing {
		if x.Reason == backup.NotStored {
			fmt.Fprintf(stderr, "lightbox: missing from storage: %s (%s), which a row names\n", x.Key, x.Kind)
		}
	}
	if n := len(m.Missing); n > 0 {
		fmt.Fprintf(stdout, "missing: %d files named by rows were not in storage (%d of them lost before the backup; see the manifest)\n", n, rep.Lost)
	}
	return nil
}

// readSecrets reads the signing key and upload secret the way the
// service does, without making either.
func readSecrets(cfg *config.Config) (*backup.Secrets, error) {
	s := &backup.Secrets{ChainKey: cfg.ChainKey, UploadSecret: cfg.UploadSecret}
	if s.ChainKey == "" {
		b, err := os.ReadFile(cfg.ChainKeyFile)
		if err != nil {
			return nil, fmt.Errorf("CHAIN_KEY_FILE: %w", err)
		}
		s.ChainKey = strings.TrimSpace(string(b))
	}
	if s.UploadSecret == "" {
		b, err := os.ReadFile(filepath.Join(cfg.DataDir, "upload-secret"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("upload secret: %w", err)
		}
		s.UploadSecret = string(b)
	}
	return s, nil
}

func listBackups(ctx context.Context, tg backup.Target, stdout io.Writer) error {
	l, err := backup.List(ctx, tg)
	if err != nil {
		return err
	}
	if len(l.Complete) == 0 {
		fmt.Fprintf(stdout, "no complete backup in %s\n", tg)
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTOOK\tFILES\tSIZE\tCHAIN HEAD\tSCHEMA\tHOLDS")
		for _, m := range l.Complete {
			holds := []string{"database"}
			if m.OriginalsOnly {
				holds = append(holds, "originals and sidecars")
			} else {
				holds = append(holds, "all files")
			}
			if m.Ledger != nil {
				holds = append(holds, "ledger")
			}
			if m.Secrets != nil {
				holds = append(holds, "secrets")
			}
			if len(m.Missing) > 0 {
				holds = append(holds, fmt.Sprintf("%d missing", len(m.Missing)))
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\t%s\n", m.ID, m.FinishedAt.Sub(m.StartedAt).Round(time.Second),
				len(m.Blobs), humanBytes(m.Bytes()), m.ChainHead.Seq, m.SchemaVersion, strings.Join(holds, ", "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(l.Incomplete) > 0 {
		fmt.Fprintf(stdout, "incomplete, not restorable (stopped midway, or running now): %s\n", strings.Join(l.Incomplete, ", "))
	}
	return nil
}

func verifyBackup(ctx context.Context, tg backup.Target, id string, concurrency int, stdout io.Writer) error {
	rep, err := backup.Verify(ctx, tg, id, concurrency)
	if rep != nil {
		for _, p := range rep.Problems {
			fmt.Fprintf(stdout, "%s: %s\n", p.Path, p.Problem)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup %s: %d files, %s read, each as its manifest says\n", rep.Manifest.ID, rep.Files, humanBytes(rep.Bytes))
	return nil
}

func pruneBackups(ctx context.Context, tg backup.Target, keep int, stdout io.Writer) error {
	rep, err := backup.Prune(ctx, tg, keep)
	if rep != nil {
		for _, id := range rep.Deleted {
			fmt.Fprintf(stdout, "deleted backup %s\n", id)
		}
		fmt.Fprintf(stdout, "kept %d complete backups", len(rep.Kept))
		if len(rep.KeptIncomplete) > 0 {
			fmt.Fprintf(stdout, " and the incomplete %s", strings.Join(rep.KeptIncomplete, ", "))
		}
		fmt.Fprintf(stdout, "; deleted %d blobs (%s) no kept backup names\n", rep.Blobs, humanBytes(rep.BlobBytes))
		if rep.BlobsLeft != "" {
			fmt.Fprintf(stdout, "no blob deleted: %s\n", rep.BlobsLeft)
		}
	}
	return err
}

func restoreBackup(ctx context.Context, cfg *config.Config, log *slog.Logger, tg backup.Target, id string, force bool, secretsTo, passphrase string,
	concurrency int, stdout, stderr io.Writer) error {
	live, err := serviceBlobs(ctx, cfg)
	if err != nil {
		return err
	}
	o := backup.RestoreOptions{DatabaseURL: cfg.DatabaseURL, Blobs: live, LedgerPath: cfg.LedgerPath(), Force: force,
		SecretsDir: secretsTo, Passphrase: passphrase, Concurrency: concurrency, PGBinDir: cfg.Backups.PGBinDir, Log: log}
	configured, keyErr := boot.ChainKeys(cfg)
	if keyErr == nil {
		o.ChainKeys = &configured
	}
	start := time.Now()
	rep, err := backup.Restore(ctx, tg, id, o)
	if rep == nil {
		return err
	}
	m := rep.Manifest
	fmt.Fprintf(stdout, "restored backup %s from %s (%s)\n", m.ID, tg, time.Since(start).Round(100*time.Millisecond))
	fmt.Fprintf(stdout, "database: schema version %d", m.SchemaVersion)
	if len(rep.Migrated) > 0 {
		fmt.Fprintf(stdout, ", migrated to %d", rep.Migrated[len(rep.Migrated)-1])
	}
	fmt.Fprintf(stdout, "\nfiles: %d (%s); %d originals match their rows' SHA-256\n", rep.Blobs, humanBytes(rep.Bytes), rep.Originals)
	switch {
	case rep.Ledger:
		fmt.Fprintf(stdout, "ledger: %s\n", cfg.LedgerPath())
	case m.Ledger != nil:
		fmt.Fprintln(stdout, "ledger: not restored, CHAIN_LEDGER_URL names an HTTP ledger")
	}
	for _, f := range rep.SecretFiles {
		fmt.Fprintf(stdout, "secret: %s\n", f)
	}
	if rep.Chain.OK {
		fmt.Fprintf(stdout, "chain: %d attestations verified from the first\n", rep.Chain.Checked)
	}
	if m.OriginalsOnly {
		fmt.Fprintln(stdout, "this backup holds originals and sidecars only: reprocess the photos to draw their thumbnails, "+
			"previews and edits again, and export again")
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(stdout, "note:", n)
	}
	if err != nil {
		return err
	}
	// The key that signs from now on must be the chain's or a successor
	// that names it as retired, or new attestations cannot follow on.
	if m.ChainKeys != nil && keyErr == nil && len(rep.SecretFiles) == 0 {
		signs := hex.EncodeToString(configured.Current)
		known := signs == m.ChainKeys.Current
		for _, k := range configured.Retired {
			known = known || hex.EncodeToString(k) == m.ChainKeys.Current
		}
		if !known {
			fmt.Fprintf(stderr, "lightbox: the configured chain key (%s) did not sign this chain: restore the backup's with --secrets-to, "+
				"or add %s to CHAIN_RETIRED_KEYS\n", signs, m.ChainKeys.Current)
		}
	}
	return nil
}

// stdinIsTerminal says whether a passphrase can be asked for.
func stdinIsTerminal() bool { return term.IsTerminal(int(os.Stdin.Fd())) }
