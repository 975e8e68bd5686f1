// Command lightbox is the operators' CLI: migrations, users, API keys,
// moving blobs, backups and their restore, bulk uploads to a running
// server, and a project's cull to and from the XMP an editor reads.
//
//	lightbox upload [--project ID | --new TITLE] [--concurrency N] [--json] PATH...
//	lightbox xmp write --project ID [--naming adobe|darktable] [--pick P] [--embed] [--dry-run] DIR
//	lightbox xmp read --project ID [--naming adobe|darktable] [--pick P] DIR
//	lightbox migrate [--dry-run]                --dry-run lists the pending migrations, applying none
//	lightbox users create --email E [--admin]   prints only the new API key
//	lightbox users quota --email E [--bytes L] [--files-in-flight L] [--exports L]
//	lightbox keys create --email E [--name N]   prints only the new API key
//	lightbox keys list --email E
//	lightbox keys revoke KEY_ID
//	lightbox keygen FILE                        a chain signing key, unless FILE exists; prints its public key
//	lightbox blobs copy --to s3                 DATA_DIR's blobs into the S3_* bucket
//	lightbox blobs orphans [--older-than D] [--delete]   stored objects no record names
//	lightbox backup create --to DIR|s3://BUCKET/PREFIX [--originals-only] [--include-secrets]
//	lightbox backup list --from LOCATION
//	lightbox backup verify --from LOCATION [ID]
//	lightbox backup restore --from LOCATION [--force] [--secrets-to DIR] [ID]
//	lightbox backup prune --from LOCATION --keep N
//	lightbox version
//	lightbox help
//
// The whole command line is parsed before anything connects, so help,
// version and a mistyped command never reach Postgres or the server. A usage error exits
// with status 2, a failure with 1.
package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"lightbox/chain"
	"lightbox/cmd/boot"
	"lightbox/store"
)

const usage = `usage:
  lightbox upload [--project ID | --new TITLE] [--concurrency N] [--json] PATH...
                                               send files and folders to the server at
                                               LIGHTBOX_URL with LIGHTBOX_API_KEY
  lightbox xmp write --project ID [--naming adobe|darktable] [--pick none|rating:N|label:COLOUR]
                     [--embed] [--dry-run] DIR
                                               write the project's cull into XMP sidecars
                                               (NAME.xmp, or NAME.EXT.xmp for darktable)
                                               beside its originals in DIR, merging with
                                               what is there; --embed writes JPEG, TIFF and
                                               DNG files' own packets instead
  lightbox xmp read --project ID [--naming adobe|darktable] [--pick P] DIR
                                               bring back ratings, rejects, labels,
                                               keywords and captions from sidecars changed
                                               after Lightbox's decision
  lightbox migrate [--dry-run]                 apply pending database migrations; --dry-run
                                               lists them (version and file), applying none
  lightbox users create --email E [--admin]    make a user; prints only its API key
  lightbox users quota --email E [--bytes L] [--files-in-flight L] [--exports L]
                                               show a user's quotas and usage, or set
                                               limits: a number (bytes take KiB..TiB),
                                               none, or default (the QUOTA_* setting)
  lightbox keys create --email E [--name N]    prints only the new API key
  lightbox keys list --email E
  lightbox keys revoke KEY_ID
  lightbox keygen FILE                         write a chain signing key, unless FILE exists;
                                               prints its public key in hex
  lightbox blobs copy --to s3                  copy DATA_DIR's blobs into the S3_* bucket;
                                               run again to resume, skipping what is there
  lightbox blobs orphans [--older-than D] [--delete]
                                               list stored objects no record names, written
                                               before D (24h) ago; --delete has the sweep
                                               delete them
  lightbox backup create --to DIR|s3://BUCKET/PREFIX [--originals-only] [--include-secrets]
                                               back up the database, the files its rows
                                               name and the chain's ledger while serving;
                                               files the location holds are not copied
                                               again; --include-secrets seals the chain
                                               key and upload secret with a passphrase
                                               (LIGHTBOX_BACKUP_PASSPHRASE, or asked)
  lightbox backup list --from LOCATION         complete backups, and those stopped midway
  lightbox backup verify --from LOCATION [ID]  read a backup (the newest) and check every
                                               file's SHA-256 against its manifest
  lightbox backup restore --from LOCATION [--force] [--secrets-to DIR] [ID]
                                               restore a backup (the newest) into an empty
                                               database and blob store, then check each
                                               original and verify the chain; --secrets-to
                                               writes its secrets into DIR
  lightbox backup prune --from LOCATION --keep N
                                               keep the newest N complete backups: delete
                                               the older ones, incomplete ones older than
                                               the newest, and the files no kept backup
                                               names
  lightbox version
  lightbox help
`

// command is a parsed command line.
type command struct {
	// db says whether run needs the migrated store; otherwise st is nil.
	db  bool
	run func(ctx context.Context, st *store.Store, stdout, stderr io.Writer) error
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args and only then connects, if the command needs to. It
// returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	cmd, err := parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "lightbox: %v\n\n%s", err, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := execute(ctx, cmd, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "lightbox:", err)
		return 1
	}
	return 0
}

func execute(ctx context.Context, cmd command, stdout, stderr io.Writer) error {
	if !cmd.db {
		return cmd.run(ctx, nil, stdout, stderr)
	}
	cfg, log, err := boot.Config()
	if err != nil {
		return err
	}
	st, err := boot.Store(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	return cmd.run(ctx, st, stdout, stderr)
}

// parse turns args into a command without touching anything outside the
// process. Its errors are usage errors, or flag.ErrHelp.
func parse(args []string) (command, error) {
	if len(args) == 0 {
		return command{}, errors.New("no command given")
	}
	name, rest := args[0], args[1:]
	switch {
	case name == "help" || isHelp(name):
		return command{}, flag.ErrHelp
	case name == "users" || name == "keys" || name == "blobs" || name == "xmp" || name == "backup":
		if len(rest) > 0 && isHelp(rest[0]) {
			return command{}, flag.ErrHelp
		}
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return command{}, fmt.Errorf("%s needs a subcommand", name)
		}
		name, rest = name+" "+rest[0], rest[1:]
	}

	fs := newFlags(name)
	switch name {
	case "version":
		return withFlags(fs, rest, 0, nil, command{run: printVersion})
	case "upload":
		return parseUpload(fs, rest, os.Getenv)
	case "xmp write", "xmp read":
		return parseXMP(fs, rest, os.Getenv)
	case "migrate":
		dryRun := fs.Bool("dry-run", false, "list the pending migrations, applying none")
		cmd, err := withFlags(fs, rest, 0, nil, command{db: true, run: alreadyMigrated})
		if err == nil && *dryRun {
			// Not db: connecting to the migrated store would apply them.
			cmd = command{run: pendingMigrations}
		}
		return cmd, err
	case "keygen":
		return withFlags(fs, rest, 1, nil, command{run: func(_ context.Context, _ *store.Store, out, stderr io.Writer) error {
			made, err := chain.GenerateKeyFile(fs.Arg(0))
			if err != nil {
				return err
			}
			if made {
				fmt.Fprintln(stderr, "wrote a new chain signing key to", fs.Arg(0))
			}
			// The public half, as CHAIN_RETIRED_KEYS takes it once the key is rotated.
			key, err := chain.LoadKey(fs.Arg(0))
			if err != nil {
				return err
			}
			fmt.Fprintln(out, chain.DescribePublicKey(key.Public().(ed25519.PublicKey)).Hex)
			return nil
		}})
	case "users create":
		email := fs.String("email", "", "the user's email")
		admin := fs.Bool("admin", false, "may use the operator pages")
		return withFlags(fs, rest, 0, []string{"email"}, command{db: true, run: func(ctx context.Context, st *store.Store, out, _ io.Writer) error {
			return createUser(ctx, st, *email, *admin, out)
		}})
	case "users quota":
		return parseQuota(fs, rest)
	case "keys create":
		email := fs.String("email", "", "the user's email")
		keyName := fs.String("name", "", "what the key is for")
		return withFlags(fs, rest, 0, []string{"email"}, command{db: true, run: func(ctx context.Context, st *store.Store, out, _ io.Writer) error {
			return createKey(ctx, st, *email, *keyName, out)
		}})
	case "keys list":
		email := fs.String("email", "", "the user's email")
		return withFlags(fs, rest, 0, []string{"email"}, command{db: true, run: func(ctx context.Context, st *store.Store, out, _ io.Writer) error {
			return listKeys(ctx, st, *email, out)
		}})
	case "blobs copy":
		return parseBlobsCopy(fs, rest)
	case "blobs orphans":
		return parseBlobsOrphans(fs, rest)
	case "backup create", "backup list", "backup verify", "backup restore", "backup prune":
		return parseBackup(fs, name, rest, os.Getenv, stdinIsTerminal())
	case "keys revoke":
		cmd, err := withFlags(fs, rest, 1, nil, command{db: true})
		if err != nil {
			return cmd, err
		}
		id, err := uuid.Parse(fs.Arg(0))
		if err != nil {
			return command{}, fmt.Errorf("keys revoke: %q is not a key id", fs.Arg(0))
		}
		cmd.run = func(ctx context.Context, st *store.Store, _, _ io.Writer) error { return revokeKey(ctx, st, id) }
		return cmd, nil
	}
	return command{}, fmt.Errorf("unknown command %q", name)
}

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// alreadyMigrated is all of "migrate" without --dry-run: connecting applies
// the migrations.
func alreadyMigrated(context.Context, *store.Store, io.Writer, io.Writer) error { return nil }

// pendingMigrations is "migrate --dry-run": it connects without migrating
// and prints each migration a migrate would apply, or that there is none.
func pendingMigrations(ctx context.Context, _ *store.Store, out, _ io.Writer) error {
	cfg, _, err := boot.Config()
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer st.Close()
	version, pending, err := st.PendingMigrations(ctx)
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		fmt.Fprintf(out, "up to date (version %d)\n", version)
	}
	for _, m := range pending {
		fmt.Fprintf(out, "%d\t%s\n", m.Version, m.Name)
	}
	return nil
}

// newFlags is a flag set that reports nothing itself: run reports its
// errors once, with the usage.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// withFlags parses args into set, wants exactly nargs arguments after the
// flags and every required flag set, and returns cmd when they are.
func withFlags(set *flag.FlagSet, args []string, nargs int, required []string, cmd command) (command, error) {
	if err := set.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return command{}, err
		}
		return command{}, fmt.Errorf("%s: %w", set.Name(), err)
	}
	switch {
	case set.NArg() > nargs:
		return command{}, fmt.Errorf("%s: unexpected argument %q", set.Name(), set.Arg(nargs))
	case set.NArg() < nargs:
		return command{}, fmt.Errorf("%s: missing argument", set.Name())
	}
	for _, name := range required {
		if set.Lookup(name).Value.String() == "" {
			return command{}, fmt.Errorf("%s: --%s is required", set.Name(), name)
		}
	}
	return cmd, nil
}

func printVersion(_ context.Context, _ *store.Store, out, _ io.Writer) error {
	fmt.Fprintln(out, "lightbox", version())
	return nil
}

// version is the module's version when the binary was built from a
// versioned module, else "devel", followed by the commit it was built from
// when the build recorded one.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	details := []string{info.GoVersion}
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			details = append(details, "commit "+s.Value)
		case s.Key == "vcs.modified" && s.Value == "true":
			details = append(details, "modified")
		}
	}
	return v + " (" + strings.Join(details, ", ") + ")"
}

func createUser(ctx context.Context, st *store.Store, email string, admin bool, out io.Writer) error {
	u, err := st.CreateUser(ctx, email, admin)
	if err != nil {
		return err
	}
	key, _, err := st.CreateAPIKey(ctx, u.ID, "created with the user")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, key)
	return nil
}

func createKey(ctx context.Context, st *store.Store, email, name string, out io.Writer) error {
	u, err := st.UserByEmail(ctx, email)
	if err != nil {
		return fmt.Errorf("user %s: %w", email, err)
	}
	key, _, err := st.CreateAPIKey(ctx, u.ID, name)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, key)
	return nil
}

func listKeys(ctx context.Context, st *store.Store, email string, out io.Writer) error {
	u, err := st.UserByEmail(ctx, email)
	if err != nil {
		return fmt.Errorf("user %s: %w", email, err)
	}
	keys, err := st.ListAPIKeys(ctx, u.ID)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPREFIX\tNAME\tCREATED\tSTATE")
	for _, k := range keys {
		state := "active"
		if k.RevokedAt != nil {
			state = "revoked " + k.RevokedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Prefix, k.Name, k.CreatedAt.UTC().Format(time.RFC3339), state)
	}
	return tw.Flush()
}

func revokeKey(ctx context.Context, st *store.Store, id uuid.UUID) error {
	if err := st.RevokeAPIKey(ctx, id); err != nil {
		return fmt.Errorf("key %s: %w", id, err)
	}
	return nil
}
