package backup

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/jmoiron/sqlx"

	"lightbox/blob"
	"lightbox/chain"
	"lightbox/store"
)

// RestoreOptions is where Restore puts a backup back, and how.
type RestoreOptions struct {
	// DatabaseURL is the database to restore into, as DATABASE_URL names it.
	DatabaseURL string
	// Blobs is the blob store to restore into.
	Blobs blob.Store
	// LedgerPath is where the chain's file ledger goes; empty when the
	// service publishes to an HTTP ledger.
	LedgerPath string
	// Force restores over a database, blob store or ledger that is not
	// empty: the database's tables are replaced, the backup's files
	// written over those at the same keys, others left as they are.
	Force bool
	// SecretsDir, when set, receives the backup's secrets (ChainKeyFile,
	// UploadSecretFile), opened with Passphrase; files there are never
	// replaced.
	SecretsDir string
	Passphrase string
	// ChainKeys verify the chain when the manifest records none.
	ChainKeys   *chain.Keys
	Concurrency int
	PGBinDir    string
	// Log hears of the migrations applied to a backup older than this
	// Lightbox.
	Log      *slog.Logger
	Progress func(BlobEvent)
}

// RestoreReport says what Restore did and found.
type RestoreReport struct {
	Manifest *Manifest
	// Blobs and Bytes count the files written to the blob store.
	Blobs int
	Bytes int64
	// Originals counts originals whose bytes have their row's SHA-256.
	Originals int
	// Migrated are the migrations applied after the database was loaded.
	Migrated []int
	Chain    chain.VerifyResult
	Ledger   bool
	// SecretFiles are the files written into SecretsDir.
	SecretFiles []string
	// Problems fail the restore; Notes are what it could not help.
	Problems []string
	Notes    []string
}

// NotEmptyError refuses to restore over data: it says what is there.
type NotEmptyError struct{ What []string }

func (e *NotEmptyError) Error() string {
	return "the restore target is not empty: " + strings.Join(e.What, "; ") + " (--force restores over it)"
}

// ErrRestoreCheck is a restore whose result does not hold: an original
// unlike its row, or a chain that does not verify.
var ErrRestoreCheck = errors.New("the restored data does not check out")

// Restore puts backup id (the newest when empty) back: the database, the
// blobs, the ledger and, when asked, the secrets. Unless opts.Force, the
// database must hold no user and no asset, the blob store no object and
// the ledger no line. It then checks each original's SHA-256 against its
// row and verifies the chain from its first entry, and returns
// ErrRestoreCheck, with the report, when either fails. A restore that
// failed midway can run again with Force.
func Restore(ctx context.Context, t Target, id string, o RestoreOptions) (*RestoreReport, error) {
	m, err := Find(ctx, t, id)
	if err != nil {
		return nil, err
	}
	rep := &RestoreReport{Manifest: m}
	all, err := store.Migrations()
	if err != nil {
		return nil, err
	}
	if known := all[len(all)-1].Version; m.SchemaVersion > known {
		return nil, fmt.Errorf("backup %s has schema version %d, newer than this lightbox knows (%d): restore it with a newer lightbox",
			m.ID, m.SchemaVersion, known)
	}
	keys, err := restoreKeys(m, o.ChainKeys)
	if err != nil {
		return nil, err
	}
	var secrets *Secrets
	if o.SecretsDir != "" {
		if secrets, err = openSecrets(ctx, t, m, o.SecretsDir, o.Passphrase); err != nil {
			return nil, err
		}
	}
	if !o.Force {
		if err := checkEmpty(ctx, o); err != nil {
			return nil, err
		}
	}

	if err := restoreDatabase(ctx, t, m, o); err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, o.DatabaseURL)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if m.SchemaVersion < all[len(all)-1].Version {
		if rep.Migrated, err = st.Migrate(ctx, o.Log); err != nil {
			return nil, fmt.Errorf("migrate the restored database: %w", err)
		}
	}
	restored, err := restoreBlobs(ctx, t, m, o, rep)
	if err != nil {
		return nil, err
	}
	if m.Ledger != nil && o.LedgerPath != "" {
		if err := restoreLedger(ctx, t, *m.Ledger, o.LedgerPath); err != nil {
			return nil, err
		}
		rep.Ledger = true
	}
	if secrets != nil {
		for path, content := range secrets.files(o.SecretsDir) {
			if err := writeSecret(path, content); err != nil {
				return nil, fmt.Errorf("secrets: %w", err)
			}
			rep.SecretFiles = append(rep.SecretFiles, path)
		}
	}

	if err := checkOriginals(ctx, o.DatabaseURL, restored, m, rep); err != nil {
		return nil, err
	}
	if rep.Chain, err = chain.Verify(ctx, st, keys, 0, 0); err != nil {
		return nil, fmt.Errorf("verify the chain: %w", err)
	}
	switch {
	case !rep.Chain.OK:
		b := rep.Chain.FirstBroken
		rep.Problems = append(rep.Problems, fmt.Sprintf("the chain breaks at seq %d: %s (%s)", b.Seq, b.Reason, b.Message))
	case rep.Chain.Checked != m.ChainHead.Seq:
		rep.Problems = append(rep.Problems, fmt.Sprintf("the chain holds %d attestations, the backup's head is at %d", rep.Chain.Checked, m.ChainHead.Seq))
	}
	if len(rep.Problems) > 0 {
		return rep, fmt.Errorf("%w: %s", ErrRestoreCheck, strings.Join(rep.Problems, "; "))
	}
	return rep, nil
}

// restoreKeys are the keys the restored chain is verified under.
func restoreKeys(m *Manifest, given *chain.Keys) (chain.Keys, error) {
	if m.ChainKeys != nil {
		return m.ChainKeys.keys()
	}
	if given != nil {
		return *given, nil
	}
	return chain.Keys{}, fmt.Errorf("backup %s records no chain key to verify the chain with: set CHAIN_KEY or CHAIN_KEY_FILE", m.ID)
}

// openSecrets reads and opens the backup's secrets, before anything is
// written, and makes sure none of their files is in dir already.
func openSecrets(ctx context.Context, t Target, m *Manifest, dir, passphrase string) (*Secrets, error) {
	if m.Secrets == nil {
		return nil, fmt.Errorf("backup %s holds no secrets (it was taken without --include-secrets)", m.ID)
	}
	var sealed strings.Builder
	if err := fetch(ctx, t, *m.Secrets, &sealed); err != nil {
		return nil, err
	}
	s, err := open(strings.NewReader(sealed.String()), passphrase)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for path := range s.files(dir) {
		if _, err := os.Stat(path); err == nil {
			return nil, fmt.Errorf("secrets: %s exists; it is never replaced", path)
		}
	}
	return s, nil
}

// checkEmpty refuses a database with users or assets, a blob store with
// any object, and a ledger with any line.
func checkEmpty(ctx context.Context, o RestoreOptions) error {
	var what []string
	db, err := sqlx.Open("postgres", o.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, table := range []string{"users", "assets"} {
		var exists bool
		if err := db.GetContext(ctx, &exists, `SELECT to_regclass($1) IS NOT NULL`, table); err != nil {
			return fmt.Errorf("connect to postgres: %w", err)
		}
		if !exists {
			continue
		}
		var n int64
		if err := db.GetContext(ctx, &n, `SELECT count(*) FROM `+table); err != nil {
			return err
		}
		if n > 0 {
			what = append(what, fmt.Sprintf("the database holds %d %s", n, table))
		}
	}
	lister, ok := o.Blobs.(blob.Lister)
	if !ok {
		return errors.New("the blob store cannot list its objects, so whether it is empty is unknown (--force restores over it)")
	}
	err = lister.List(ctx, func(i blob.Info) error {
		what = append(what, "the blob store holds objects ("+i.Key+")")
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return fmt.Errorf("blob store: %w", err)
	}
	if o.LedgerPath != "" {
		if st, err := os.Stat(o.LedgerPath); err == nil && st.Size() > 0 {
			what = append(what, "the chain ledger "+o.LedgerPath+" has entries")
		}
	}
	if len(what) > 0 {
		return &NotEmptyError{What: what}
	}
	return nil
}

// fetch copies file f of the target into w, failing if its bytes are not
// those the manifest lists.
func fetch(ctx context.Context, t Target, f File, w io.Writer) error {
	r, _, err := t.Open(ctx, f.Path)
	if err != nil {
		return targetError(t, err)
	}
	defer r.Close()
	h := &hashingReader{r: ctxReader{ctx, r}, h: sha256.New()}
	if _, err := io.Copy(w, h); err != nil {
		var src *sourceError
		if errors.As(err, &src) {
			return err
		}
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if got := h.info(f.Path); got.Size != f.Size || got.SHA256 != f.SHA256 {
		return fmt.Errorf("%w: %s holds %d bytes with SHA-256 %s, the manifest says %d with %s",
			ErrDamaged, f.Path, got.Size, got.SHA256, f.Size, f.SHA256)
	}
	return nil
}

// restoreDatabase loads the dump, checked whole first into a temporary
// file: a damaged dump is refused before the database is touched.
func restoreDatabase(ctx context.Context, t Target, m *Manifest, o RestoreOptions) error {
	tmp, err := os.CreateTemp("", "lightbox-restore-*.dump")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := fetch(ctx, t, m.Database, tmp); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return pgRestore(ctx, o.PGBinDir, o.DatabaseURL, tmp.Name())
}

// restoreBlobs writes every blob back at its key, and returns the
// SHA-256 of the bytes written at each.
func restoreBlobs(ctx context.Context, t Target, m *Manifest, o RestoreOptions, rep *RestoreReport) (map[string]string, error) {
	conc := o.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	written := make(map[string]string, len(m.Blobs))
	var mu sync.Mutex
	err := parallel(ctx, len(m.Blobs), conc, func(ctx context.Context, i int) error {
		b := m.Blobs[i]
		r, _, err := t.Open(ctx, BlobPath(b.SHA256))
		if err != nil {
			return fmt.Errorf("%s: %w", b.Key, targetError(t, err))
		}
		defer r.Close()
		info, err := o.Blobs.Put(ctx, b.Key, r, b.Size)
		if err != nil {
			return fmt.Errorf("restore %s: %w", b.Key, err)
		}
		if info.SHA256 != b.SHA256 || info.Size != b.Size {
			o.Blobs.Delete(ctx, b.Key)
			return fmt.Errorf("%w: %s holds %d bytes with SHA-256 %s, the manifest says %d with %s",
				ErrDamaged, BlobPath(b.SHA256), info.Size, info.SHA256, b.Size, b.SHA256)
		}
		mu.Lock()
		defer mu.Unlock()
		written[b.Key] = info.SHA256
		rep.Blobs++
		rep.Bytes += info.Size
		if o.Progress != nil {
			o.Progress(BlobEvent{Key: b.Key, Size: b.Size, Outcome: Copied, Done: rep.Blobs, Total: len(m.Blobs)})
		}
		return nil
	})
	return written, err
}

// restoreLedger writes the ledger file whole, or not at all.
func restoreLedger(ctx context.Context, t Target, f File, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ledger-restore-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := fetch(ctx, t, f, tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(0o640); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// checkOriginals compares, for every finalized asset of the restored
// database, the SHA-256 of the bytes written at its original's key with
// its row's. An upload that failed may have had its bytes discarded;
// any other asset without its original is a problem.
func checkOriginals(ctx context.Context, dsn string, written map[string]string, m *Manifest, rep *RestoreReport) error {
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	var rows []struct {
		ID     string `db:"id"`
		Key    string `db:"blob_key"`
		SHA256 string `db:"checksum_sha256"`
		Status string `db:"status"`
	}
	if err := db.SelectContext(ctx, &rows, `SELECT id, blob_key, checksum_sha256, status FROM assets
		WHERE status NOT IN ('pending_upload', 'duplicate') AND checksum_sha256 IS NOT NULL ORDER BY id`); err != nil {
		return err
	}
	missing := map[string]string{}
	for _, x := range m.Missing {
		missing[x.Key] = x.Reason
	}
	for _, r := range rows {
		got, ok := written[r.Key]
		switch {
		case ok && got == r.SHA256:
			rep.Originals++
		case ok:
			rep.Problems = append(rep.Problems, fmt.Sprintf("asset %s: its original has SHA-256 %s, its row says %s", r.ID, got, r.SHA256))
		case r.Status == "failed":
		case missing[r.Key] == GoneSinceSnapshot:
			rep.Notes = append(rep.Notes, fmt.Sprintf("asset %s was deleted while the backup ran: its row is back without its files, delete it again", r.ID))
		default:
			rep.Problems = append(rep.Problems, fmt.Sprintf("asset %s (%s): its original is not in the backup", r.ID, r.Status))
		}
	}
	return nil
}
