package backup_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/backup"
	"lightbox/blob"
	"lightbox/chain"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// The tables the seeded project fills, which the drill must show back.
var seededTables = []string{"users", "projects", "assets", "asset_files", "ratings", "edit_versions", "galleries",
	"gallery_assets", "exports", "jobs", "batches", "attestation_queue", "attestations", "chain_head"}

// TestRestoreDrill seeds a project, backs it up, wipes the service (its
// database's schema, every blob, the ledger) and restores: every row is
// back as it was, every file with its SHA-256, and the chain verifies
// from its first entry. Disk to disk, and S3 to S3.
func TestRestoreDrill(t *testing.T) {
	for _, c := range []struct {
		name   string
		live   func(testing.TB) blob.Store
		target func(testing.TB) backup.Target
	}{
		{"disk", diskStore, func(t testing.TB) backup.Target { tg, _ := dirTarget(t); return tg }},
		{"s3", s3Store, s3Target},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
			defer cancel()
			f := newFixture(t, c.live(t))
			f.seed(t)
			tg := c.target(t)
			before := tables(t, f.env.DSN)
			ledger, err := os.ReadFile(f.ledger)
			if err != nil {
				t.Fatal(err)
			}
			files := liveKeys(t, f.live)

			start := time.Now()
			rep, err := backup.Create(ctx, tg, f.options())
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			m := rep.Manifest
			if rep.Copied != blobCount(6) || rep.Present != 0 || len(m.Blobs) != blobCount(6) || len(m.Missing) != 0 {
				t.Fatalf("copied %d, present %d, %d in the manifest, missing %v; want all %d copied",
					rep.Copied, rep.Present, len(m.Blobs), m.Missing, blobCount(6))
			}
			if m.ChainHead.Seq != 6 || m.SchemaVersion == 0 || m.Ledger == nil || m.Ledger.Size != int64(len(ledger)) {
				t.Fatalf("manifest: head %+v, schema %d, ledger %+v (file of %d bytes)", m.ChainHead, m.SchemaVersion, m.Ledger, len(ledger))
			}

			// The wipe: nothing of the service is left.
			if _, err := f.env.DB.ExecContext(ctx, "DROP SCHEMA "+f.env.Schema+" CASCADE"); err != nil {
				t.Fatal(err)
			}
			for _, k := range files {
				if err := f.live.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Remove(f.ledger); err != nil {
				t.Fatal(err)
			}

			start = time.Now()
			res, err := backup.Restore(ctx, tg, "", f.restoreOptions())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d files: backup %v, restore %v", len(files), took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			if res.Manifest.ID != m.ID || res.Blobs != blobCount(6) || res.Originals != 6 || !res.Ledger || len(res.Problems) > 0 {
				t.Fatalf("restored %s: %d blobs, %d originals checked, ledger %v, problems %v", res.Manifest.ID, res.Blobs, res.Originals, res.Ledger, res.Problems)
			}
			if !res.Chain.OK || res.Chain.Checked != 6 {
				t.Fatalf("the restored chain: %+v", res.Chain)
			}

			sameTables(t, tables(t, f.env.DSN), before, seededTables...)
			if got := liveKeys(t, f.live); !equal(got, files) {
				t.Errorf("the store holds %d files, %d before the wipe", len(got), len(files))
			}
			if n := storedFiles(t, f.env.DSN, f.live); n != blobCount(6) {
				t.Errorf("rows name %d files, want %d", n, blobCount(6))
			}
			if got, _ := os.ReadFile(f.ledger); string(got) != string(ledger) {
				t.Errorf("the ledger holds %d bytes, %d before", len(got), len(ledger))
			}
			st, err := store.Open(ctx, f.env.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if v, err := chain.Verify(ctx, st, f.keys, 0, 0); err != nil || !v.OK || v.Checked != 6 {
				t.Errorf("the chain after the restore: %+v, %v", v, err)
			}
		})
	}
}

func equal(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// TestIncremental: a second backup of an unchanged service copies nothing,
// one after a new photo copies only that photo's files; each is complete.
func TestIncremental(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, diskStore(t))
	f.seed(t)
	tg, _ := dirTarget(t)

	start := time.Now()
	first, err := backup.Create(ctx, tg, f.options())
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	start = time.Now()
	again, err := backup.Create(ctx, tg, f.options())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files: first backup %v, the next %v", blobCount(6), took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if again.Copied != 0 || again.Present != blobCount(6) || again.CopiedBytes != 0 {
		t.Errorf("nothing changed: copied %d (%d bytes), present %d; want 0 and %d", again.Copied, again.CopiedBytes, again.Present, blobCount(6))
	}
	if again.Manifest.ID == first.Manifest.ID {
		t.Errorf("two backups are both %s", first.Manifest.ID)
	}

	f.addPhotos(t, 1)
	f.attest(t)
	third, err := backup.Create(ctx, tg, f.options())
	if err != nil {
		t.Fatal(err)
	}
	if third.Copied != 3 || third.Present != blobCount(6) || len(third.Manifest.Blobs) != blobCount(6)+3 || third.Manifest.ChainHead.Seq != 7 {
		t.Errorf("after a photo: copied %d, present %d, %d in the manifest, head %d; want its original, thumbnail and preview",
			third.Copied, third.Present, len(third.Manifest.Blobs), third.Manifest.ChainHead.Seq)
	}

	l, err := backup.List(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Complete) != 3 || len(l.Incomplete) != 0 || l.Complete[2].ID != third.Manifest.ID {
		t.Errorf("listed %d complete, incomplete %v", len(l.Complete), l.Incomplete)
	}
	// Each backup verifies on its own, the first one too.
	for _, m := range l.Complete {
		if _, err := backup.Verify(ctx, tg, m.ID, 4); err != nil {
			t.Errorf("verify %s: %v", m.ID, err)
		}
	}
}

// failingTarget lets its first `left` blob writes through, then fails
// every write with err: a target that fills up or stops answering.
type failingTarget struct {
	backup.Target
	mu   sync.Mutex
	left int
	err  error
}

func (f *failingTarget) Put(ctx context.Context, key string, r io.Reader, size int64, sum string) (blob.Info, error) {
	f.mu.Lock()
	stop := f.left == 0 && strings.HasPrefix(key, "blobs/")
	if strings.HasPrefix(key, "blobs/") && f.left > 0 {
		f.left--
	}
	f.mu.Unlock()
	if stop {
		return blob.Info{}, f.err
	}
	return f.Target.Put(ctx, key, r, size, sum)
}

// TestInterruptedBackup stops a backup midway three ways (the process
// killed, the target full, the target gone): it is never listed as
// complete, the error says what happened, the service is untouched, and
// the next backup completes copying only what the interrupted one had not.
func TestInterruptedBackup(t *testing.T) {
	const copiedFirst = 10
	for _, c := range []struct {
		name string
		says string
		run  func(t *testing.T, f *fixture, tg backup.Target) error
	}{
		{"killed", "context canceled", func(t *testing.T, f *fixture, tg backup.Target) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			o := f.options()
			o.Concurrency = 1
			o.Progress = func(e backup.BlobEvent) {
				if e.Done == copiedFirst {
					cancel()
				}
			}
			_, err := backup.Create(ctx, tg, o)
			return err
		}},
		{"full", "is full", func(t *testing.T, f *fixture, tg backup.Target) error {
			o := f.options()
			o.Concurrency = 1
			full := &failingTarget{Target: tg, left: copiedFirst, err: blob.ErrFull}
			_, err := backup.Create(context.Background(), full, o)
			return err
		}},
		{"unreachable", "does not answer", func(t *testing.T, f *fixture, tg backup.Target) error {
			o := f.options()
			o.Concurrency = 1
			gone := &failingTarget{Target: tg, left: copiedFirst, err: fmt.Errorf("%w: connection refused", blob.ErrUnavailable)}
			_, err := backup.Create(context.Background(), gone, o)
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t, diskStore(t))
			f.seed(t)
			tg, _ := dirTarget(t)
			before := tables(t, f.env.DSN)
			files := liveKeys(t, f.live)

			err := c.run(t, f, tg)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("the interrupted backup: %v; want an error saying %q", err, c.says)
			}
			l, err := backup.List(ctx, tg)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Complete) != 0 || len(l.Incomplete) != 1 {
				t.Fatalf("listed %d complete and %v incomplete; want none complete, one incomplete", len(l.Complete), l.Incomplete)
			}
			if _, err := backup.Find(ctx, tg, ""); !errors.Is(err, backup.ErrNoBackup) {
				t.Errorf("the newest backup: %v, want ErrNoBackup", err)
			}
			if _, err := backup.Find(ctx, tg, l.Incomplete[0]); !errors.Is(err, backup.ErrNoBackup) {
				t.Errorf("the interrupted backup by its id: %v, want ErrNoBackup", err)
			}

			// The service: no row changed, no file, no transaction left open.
			sameTables(t, tables(t, f.env.DSN), before)
			if got := liveKeys(t, f.live); !equal(got, files) {
				t.Errorf("the store holds %d files, %d before", len(got), len(files))
			}
			var open int
			if err := f.env.DB.Get(&open, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND state LIKE 'idle in transaction%'`); err != nil || open != 0 {
				t.Errorf("%d transactions left open (%v)", open, err)
			}
			f.addPhotos(t, 1) // the service takes writes as before

			rep, err := backup.Create(ctx, tg, f.options())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Present != copiedFirst || rep.Copied != blobCount(6)+3-copiedFirst {
				t.Errorf("the next backup: copied %d, present %d; want %d and %d", rep.Copied, rep.Present, blobCount(6)+3-copiedFirst, copiedFirst)
			}
			l, err = backup.List(ctx, tg)
			if err != nil || len(l.Complete) != 1 || l.Complete[0].ID != rep.Manifest.ID {
				t.Errorf("after the next backup: %+v, %v", l, err)
			}
			if _, err := backup.Verify(ctx, tg, "", 4); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestUnreachableBucket cuts an S3 target off midway, as its clients see
// it: the backup fails saying so, and is not listed once the bucket is
// back.
func TestUnreachableBucket(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	f := newFixture(t, diskStore(t))
	f.seed(t)
	cfg := testenv.S3(t)
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, u.Host)
	via := cfg
	via.Endpoint = "http://" + proxy.Addr
	tg, err := backup.OpenTarget(ctx, backup.Location{Bucket: cfg.Bucket, Prefix: "b/"}, via, true)
	if err != nil {
		t.Fatal(err)
	}
	o := f.options()
	o.Concurrency = 1
	o.Progress = func(e backup.BlobEvent) {
		if e.Done == 3 {
			proxy.Down()
		}
	}
	_, err = backup.Create(ctx, tg, o)
	if err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("a backup to a bucket cut off: %v; want it to say the target does not answer", err)
	}
	proxy.Up()
	l, err := backup.List(ctx, tg)
	if err != nil || len(l.Complete) != 0 || len(l.Incomplete) != 1 {
		t.Fatalf("listed %+v, %v; want one incomplete backup", l, err)
	}
	rep, err := backup.Create(ctx, tg, f.options())
	if err != nil || rep.Present != 3 || rep.Copied != blobCount(6)-3 {
		t.Fatalf("the next backup: %+v, %v", rep, err)
	}
}

// TestBackupWhileUploading takes a backup while photos are finalized one
// after another: the restore holds every photo finalized before the
// snapshot, in order, each with its files, and none finalized after it.
func TestBackupWhileUploading(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	f := newFixture(t, s3Store(t))
	tg := s3Target(t)

	stop := make(chan struct{})
	arrived := make(chan struct{}, 1000)
	uploadErr := make(chan error, 1)
	go func() {
		defer close(uploadErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ids, err := f.upload(ctx, 1)
			if err == nil {
				err = f.ingest(ctx, ids)
			}
			if err != nil {
				uploadErr <- err
				return
			}
			arrived <- struct{}{}
		}
	}()
	for range 3 {
		select {
		case <-arrived:
		case err := <-uploadErr:
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	before := len(f.photos)
	f.mu.Unlock()
	rep, err := backup.Create(ctx, tg, f.options())
	close(stop)
	if uerr := <-uploadErr; uerr != nil {
		t.Fatal(uerr)
	}
	if err != nil {
		t.Fatal(err)
	}

	into := emptyFixture(t, s3Store(t))
	res, err := backup.Restore(ctx, tg, rep.Manifest.ID, into.restoreOptions())
	if err != nil {
		t.Fatal(err)
	}
	var restored []uuid.UUID
	// An upload whose bytes arrived but whose finalize came after the
	// snapshot is there as it was then: pending.
	if err := into.env.DB.Select(&restored, `SELECT id FROM assets WHERE status <> 'pending_upload' ORDER BY created_at, id`); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d photos finalized before the backup began, %d in it, %d by its end", before, len(restored), len(f.photos))
	if len(restored) < before || len(restored) != res.Originals {
		t.Fatalf("%d photos restored, %d originals checked; want at least the %d finalized before the backup", len(restored), res.Originals, before)
	}
	for i, id := range restored {
		if f.photos[i] != id {
			t.Fatalf("photo %d restored is %s, the %dth finalized was %s", i, id, i, f.photos[i])
		}
	}
	storedFiles(t, into.env.DSN, into.live)
}

// TestRestoreRefusesDataUnlessForced: a database with users or assets, a
// store with objects or a ledger with lines is not restored over without
// Force; with it, the restore replaces the tables and checks out.
func TestRestoreRefusesDataUnlessForced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, diskStore(t))
	f.seed(t)
	tg, _ := dirTarget(t)
	if _, err := backup.Create(ctx, tg, f.options()); err != nil {
		t.Fatal(err)
	}

	_, err := backup.Restore(ctx, tg, "", f.restoreOptions())
	var notEmpty *backup.NotEmptyError
	if !errors.As(err, &notEmpty) || len(notEmpty.What) != 4 || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("restore over the service itself: %v; want it refused for its users, assets, blobs and ledger", err)
	}

	// Only blobs: the database empty (migrated, no rows), the store not.
	into := emptyFixture(t, f.live)
	_, err = backup.Restore(ctx, tg, "", into.restoreOptions())
	if !errors.As(err, &notEmpty) || len(notEmpty.What) != 1 || !strings.Contains(notEmpty.What[0], "blob store") {
		t.Fatalf("restore into a store with objects: %v", err)
	}
	if n := into.env.Count(t, `SELECT count(*) FROM users`); n != 0 {
		t.Fatalf("a refused restore wrote %d users", n)
	}

	// Forced, over the service after it changed: back to the backup.
	before := tables(t, f.env.DSN)
	f.addPhotos(t, 2)
	o := f.restoreOptions()
	o.Force = true
	res, err := backup.Restore(ctx, tg, "", o)
	if err != nil || res.Originals != 6 || !res.Chain.OK {
		t.Fatalf("a forced restore: %+v, %v", res, err)
	}
	sameTables(t, tables(t, f.env.DSN), before)
}

// TestVerifyFindsDamage: a file of a backup changed or gone is found by
// Verify, and a restore of it refuses before writing anything.
func TestVerifyFindsDamage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, diskStore(t))
	f.seed(t)
	tg, dir := dirTarget(t)
	rep, err := backup.Create(ctx, tg, f.options())
	if err != nil {
		t.Fatal(err)
	}
	if v, err := backup.Verify(ctx, tg, "", 4); err != nil || v.Files != blobCount(6)+2 || len(v.Problems) != 0 {
		t.Fatalf("verify an intact backup: %+v, %v", v, err)
	}

	m := rep.Manifest
	changed := backup.BlobPath(m.Blobs[0].SHA256)
	gone := backup.BlobPath(m.Blobs[1].SHA256)
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(changed)), bytesOf(int(m.Blobs[0].Size)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(gone))); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(dir, filepath.FromSlash(m.Database.Path))
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(dump, b, 0o644); err != nil {
		t.Fatal(err)
	}

	v, err := backup.Verify(ctx, tg, m.ID, 4)
	if !errors.Is(err, backup.ErrDamaged) || len(v.Problems) != 3 {
		t.Fatalf("verify a damaged backup: %v, problems %+v; want 3", err, v)
	}
	found := map[string]string{}
	for _, p := range v.Problems {
		found[p.Path] = p.Problem
	}
	if found[gone] != "missing" || !strings.Contains(found[changed], "SHA-256") || !strings.Contains(found[m.Database.Path], "SHA-256") {
		t.Errorf("problems %+v", v.Problems)
	}

	into := emptyFixture(t, diskStore(t))
	if _, err := backup.Restore(ctx, tg, m.ID, into.restoreOptions()); !errors.Is(err, backup.ErrDamaged) {
		t.Fatalf("restore a damaged dump: %v, want ErrDamaged", err)
	}
	if n := into.env.Count(t, `SELECT count(*) FROM users`); n != 0 || len(liveKeys(t, into.live)) != 0 {
		t.Errorf("a refused restore wrote %d users and files %v", n, liveKeys(t, into.live))
	}
}

// TestSecrets: the signing key and upload secret go in sealed under a
// passphrase, come back out with it into files of their own, and a wrong
// passphrase opens nothing and restores nothing.
func TestSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, diskStore(t))
	f.seed(t)
	tg, dir := dirTarget(t)
	secrets := &backup.Secrets{ChainKey: keyPEM(t, f.key), UploadSecret: strings.Repeat("ab", 32)}
	o := f.options()
	o.Secrets, o.Passphrase = secrets, "short"
	if _, err := backup.Create(ctx, tg, o); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Fatalf("a short passphrase: %v", err)
	}
	o.Passphrase = "correct horse battery staple"
	rep, err := backup.Create(ctx, tg, o)
	if err != nil {
		t.Fatal(err)
	}
	sealed := readAll(t, tg, rep.Manifest.Secrets.Path)
	if strings.Contains(string(sealed), "PRIVATE KEY") || strings.Contains(string(sealed), secrets.UploadSecret) {
		t.Fatal("the secrets are in the backup in clear")
	}
	// Nothing else in the backup holds them either.
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), secrets.UploadSecret) {
				t.Errorf("%s holds the upload secret", p)
			}
		}
		return nil
	})

	into := emptyFixture(t, diskStore(t))
	ro := into.restoreOptions()
	ro.SecretsDir, ro.Passphrase = t.TempDir(), "incorrect horse battery staple"
	if _, err := backup.Restore(ctx, tg, "", ro); !errors.Is(err, backup.ErrWrongPassphrase) {
		t.Fatalf("a wrong passphrase: %v", err)
	}
	if n := into.env.Count(t, `SELECT count(*) FROM users`); n != 0 {
		t.Fatalf("a restore with a wrong passphrase wrote %d users", n)
	}
	if left, _ := os.ReadDir(ro.SecretsDir); len(left) != 0 {
		t.Fatalf("a wrong passphrase wrote %v", left)
	}

	ro.Passphrase = o.Passphrase
	res, err := backup.Restore(ctx, tg, "", ro)
	if err != nil || len(res.SecretFiles) != 2 {
		t.Fatalf("restore with the passphrase: %+v, %v", res, err)
	}
	key, err := chain.LoadKey(filepath.Join(ro.SecretsDir, backup.ChainKeyFile))
	if err != nil || !key.Equal(f.key) {
		t.Errorf("the restored signing key: %v", err)
	}
	st, _ := os.Stat(filepath.Join(ro.SecretsDir, backup.UploadSecretFile))
	if b, _ := os.ReadFile(filepath.Join(ro.SecretsDir, backup.UploadSecretFile)); string(b) != secrets.UploadSecret || st.Mode().Perm() != 0o600 {
		t.Errorf("the restored upload secret: %q, mode %v", b, st.Mode())
	}
}

// TestOriginalsOnly keeps only what cannot be drawn again: originals and
// sidecars. Its restore checks out, and a full backup after it copies the
// rest.
func TestOriginalsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, diskStore(t))
	f.seed(t)
	tg, _ := dirTarget(t)
	o := f.options()
	o.OriginalsOnly = true
	o.DatabaseURL = keyValueDSN(t, f.env.DSN) // lib/pq's other form reaches pg_dump too
	rep, err := backup.Create(ctx, tg, o)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, b := range rep.Manifest.Blobs {
		kinds[b.Kind]++
	}
	if len(kinds) != 2 || kinds[backup.KindOriginal] != 6 || kinds[store.KindXMPSidecar] != 1 || !rep.Manifest.OriginalsOnly {
		t.Fatalf("kept %v", kinds)
	}
	into := emptyFixture(t, diskStore(t))
	res, err := backup.Restore(ctx, tg, "", into.restoreOptions())
	if err != nil || res.Originals != 6 || res.Blobs != 7 {
		t.Fatalf("restore: %+v, %v", res, err)
	}
	full, err := backup.Create(ctx, tg, f.options())
	if err != nil || full.Present != 7 || full.Copied != blobCount(6)-7 {
		t.Fatalf("a full backup after: %+v, %v", full, err)
	}
}
