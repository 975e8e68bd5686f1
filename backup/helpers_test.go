package backup_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"lightbox/app"
	"lightbox/backup"
	"lightbox/blob"
	"lightbox/chain"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// fixture is one service's state: a database, a blob store and a ledger
// file, with a project of photos in them.
type fixture struct {
	env     *testenv.Env
	live    blob.Store
	ledger  string // the chain's file ledger
	key     ed25519.PrivateKey
	keys    chain.Keys
	owner   uuid.UUID
	project uuid.UUID
	mu      sync.Mutex
	photos  []uuid.UUID // finalized, in order
	// original is the size of each new original past the first 3,000
	// bytes; small unless a benchmark wants photo-sized files.
	original int
}

// newFixture is a service with an empty project, keeping its blobs in
// live.
func newFixture(t testing.TB, live blob.Store) *fixture {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{env: testenv.New(t), live: live, ledger: filepath.Join(t.TempDir(), "chain-ledger.jsonl"),
		key: key, keys: chain.Keys{Current: pub}}
	f.owner, f.project = f.env.Project(t)
	return f
}

// emptyFixture is a service with nothing in it yet, to restore into.
func emptyFixture(t testing.TB, live blob.Store) *fixture {
	t.Helper()
	return &fixture{env: testenv.New(t), live: live, ledger: filepath.Join(t.TempDir(), "chain-ledger.jsonl")}
}

func diskStore(t testing.TB) blob.Store {
	t.Helper()
	d, err := blob.NewDisk(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func s3Store(t testing.TB) blob.Store {
	t.Helper()
	s, err := blob.NewS3(testenv.S3(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func dirTarget(t testing.TB) (backup.Target, string) {
	t.Helper()
	dir := t.TempDir()
	tg, err := backup.OpenTarget(context.Background(), backup.Location{Dir: dir}, blob.S3Config{}, true)
	if err != nil {
		t.Fatal(err)
	}
	return tg, dir
}

func s3Target(t testing.TB) backup.Target {
	t.Helper()
	cfg := testenv.S3(t)
	tg, err := backup.OpenTarget(context.Background(), backup.Location{Bucket: cfg.Bucket, Prefix: "nightly/"}, cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// bytesOf is n random bytes: no two files of a test are alike.
func bytesOf(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func (f *fixture) put(ctx context.Context, key string, data []byte) (store.AssetFile, error) {
	info, err := f.live.Put(ctx, key, bytes.NewReader(data), int64(len(data)))
	return store.AssetFile{BlobKey: key, ContentType: "image/jpeg", ByteSize: info.Size, ChecksumSHA256: info.SHA256}, err
}

// upload stores n new originals and finalizes them, one after another, as
// the API does: bytes first, then the row that names them.
func (f *fixture) upload(ctx context.Context, n int) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	for range n {
		id := uuid.New()
		data := bytesOf(3000 + f.original + len(f.photos))
		key := blob.OriginalKey(f.project, id)
		if _, err := f.put(ctx, key, data); err != nil {
			return ids, err
		}
		a := store.NewAsset{ID: id, Filename: fmt.Sprintf("IMG_%04d.jpg", len(f.photos)), ContentType: "image/jpeg",
			ByteSize: int64(len(data)), BlobKey: key}
		if err := f.env.Store.AddPendingAssets(ctx, f.project, []store.NewAsset{a}, time.Now().Add(time.Hour)); err != nil {
			return ids, err
		}
		sum := testenv.Checksum(data)
		if err := f.env.Store.RecordUpload(ctx, id, sum, int64(len(data))); err != nil {
			return ids, err
		}
		err := f.env.Store.WithTx(ctx, func(tx *store.Store) error {
			_, err := app.AcceptUploads(ctx, tx, f.owner, f.project, []store.FinalizeItem{{AssetID: id, Checksum: sum}}, nil)
			return err
		})
		if err != nil {
			return ids, err
		}
		f.mu.Lock()
		f.photos = append(f.photos, id)
		f.mu.Unlock()
		ids = append(ids, id)
	}
	return ids, nil
}

// ingest draws a thumbnail and a preview of each photo, as the worker's
// ingest does: files first, then their rows.
func (f *fixture) ingest(ctx context.Context, ids []uuid.UUID) error {
	for _, id := range ids {
		out := store.IngestOutput{AssetID: id, Width: 4000, Height: 3000, EXIF: json.RawMessage(`{}`),
			Quality: json.RawMessage(`{}`), HashAlgorithm: "dhash", PHash: uint64(len(id.String()))}
		for _, kind := range []string{blob.KindThumbnail, blob.KindPreview} {
			file, err := f.put(ctx, blob.DerivedKey(id, kind), bytesOf(500))
			if err != nil {
				return err
			}
			file.AssetID, file.Kind = id, kind
			out.Files = append(out.Files, file)
		}
		if err := f.env.Store.SaveIngest(ctx, out); err != nil {
			return err
		}
	}
	return nil
}

// addPhotos uploads and ingests n photos.
func (f *fixture) addPhotos(t testing.TB, n int) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	ids, err := f.upload(ctx, n)
	if err == nil {
		err = f.ingest(ctx, ids)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// attest signs every queued original into the chain and its ledger.
func (f *fixture) attest(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	l, err := chain.OpenFileLedger(f.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fl := &chain.Flusher{Store: f.env.Store, Key: f.key, Ledger: l, BatchSize: 100, Concurrency: 4, ItemTimeout: time.Minute,
		Logger: slog.New(slog.DiscardHandler)}
	if _, err := fl.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := chain.Verify(ctx, f.env.Store, f.keys, 0, 0)
	if err != nil || !res.OK || res.Checked != int64(len(f.photos)) {
		t.Fatalf("the chain before the backup: %+v, %v; want %d verified", res, err, len(f.photos))
	}
}

// seed fills the project as a photographer's would be: photos ingested,
// culled, one edited, one with an editor's sidecar, a watermarked gallery,
// a finished export, the jobs of all that, and the chain attested.
func (f *fixture) seed(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	st := f.env.Store
	ids := f.addPhotos(t, 6)
	f.env.FinishJobs(t, f.project, tasks.TypeIngest)

	five, yes := 5, true
	if _, err := st.CullActions(ctx, f.owner, f.project, []store.RatingChange{
		{AssetID: ids[0], Rating: &five, Picked: &yes}, {AssetID: ids[1], Rejected: &yes}, {AssetID: ids[2], Starred: &yes},
	}); err != nil {
		t.Fatal(err)
	}

	var versions []store.EditVersion
	f.env.Tx(t, func(tx *store.Store) (err error) {
		versions, _, err = app.RecordEdits(ctx, tx, f.owner, f.project, []store.EditTarget{
			{AssetID: ids[0], Name: "warmer", Params: json.RawMessage(`{"temperature":12,"crop":{"ratio":"4:5"}}`)}})
		return err
	})
	var renders []store.AssetFile
	for _, kind := range []string{blob.KindEditPreview, blob.KindEditThumbnail} {
		file, err := f.put(ctx, blob.DerivedKey(ids[0], kind), bytesOf(700))
		if err != nil {
			t.Fatal(err)
		}
		file.AssetID, file.Kind = ids[0], kind
		renders = append(renders, file)
	}
	if saved, _, err := app.SaveEditRender(ctx, st, versions[0].ID, renders...); err != nil || !saved {
		t.Fatalf("edit render: saved %v, %v", saved, err)
	}
	f.env.FinishJobs(t, f.project, tasks.TypeEdit)

	sidecar, err := f.put(ctx, blob.SidecarKey(ids[1]), []byte(`<x:xmpmeta xmlns:x="adobe:ns:meta/"/>`))
	if err != nil {
		t.Fatal(err)
	}
	sidecar.AssetID, sidecar.Kind, sidecar.ContentType = ids[1], store.KindXMPSidecar, "application/rdf+xml"
	if _, err := st.SaveSidecar(ctx, store.SidecarOutput{AssetID: ids[1], File: sidecar, Keywords: []string{"wedding"}}); err != nil {
		t.Fatal(err)
	}

	g := &store.Gallery{ID: uuid.New(), ProjectID: f.project, Title: "Proofs", Slug: "proofs-" + uuid.NewString()[:8], Watermark: true}
	if _, err := st.CreateGallery(ctx, g, ids[:3]); err != nil {
		t.Fatal(err)
	}
	mark := store.Mark{Text: "Proofs", Position: store.DefaultMarkPosition, Opacity: store.DefaultMarkOpacity}
	for _, a := range ids[:3] {
		key := "galleries/" + g.ID.String() + "/" + a.String() + "-" + uuid.NewString() + ".jpg"
		if err := st.DiscardAfter(ctx, []string{key}, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.put(ctx, key, bytesOf(600)); err != nil {
			t.Fatal(err)
		}
		if err := st.SetWatermarkKey(ctx, g.ID, a, key, mark); err != nil {
			t.Fatal(err)
		}
	}

	e := &store.Export{ID: uuid.New(), ProjectID: f.project, UserID: f.owner, Preset: "web", Settings: json.RawMessage(`{}`)}
	f.env.Tx(t, func(tx *store.Store) error { return app.RecordExport(ctx, tx, e) })
	f.env.RecordJob(t, store.JobUpdate{ID: *e.JobID, Status: store.JobRunning, Attempt: 1})
	started, ok, err := st.StartExport(ctx, e.ID)
	if err != nil || !ok {
		t.Fatalf("start the export: %v %v", ok, err)
	}
	run := *started.RunToken
	if _, err := st.SetExportPlan(ctx, e.ID, run, ids); err != nil {
		t.Fatal(err)
	}
	archive := "exports/" + e.ID.String() + "/" + run.String() + "/web.zip"
	if err := st.DiscardAfter(ctx, []string{archive}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	file, err := f.put(ctx, archive, bytesOf(9000))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishExport(ctx, e.ID, run, archive, file.ByteSize, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.JobFinished(ctx, *e.JobID, store.JobDone, "", ""); err != nil {
		t.Fatal(err)
	}
	f.attest(t)
}

// blobCount is how many files the seeded project has: an original, a
// thumbnail and a preview a photo, the edit's two renders, one sidecar,
// three gallery previews and the export.
func blobCount(photos int) int { return 3*photos + 2 + 1 + 3 + 1 }

func (f *fixture) options() backup.Options {
	return backup.Options{DatabaseURL: f.env.DSN, Blobs: f.live, LedgerPath: f.ledger, ChainKeys: &f.keys, Lightbox: "test"}
}

func (f *fixture) restoreOptions() backup.RestoreOptions {
	return backup.RestoreOptions{DatabaseURL: f.env.DSN, Blobs: f.live, LedgerPath: f.ledger, Log: slog.New(slog.DiscardHandler)}
}

// tables digests every table of the database: its rows, in order, as
// text. Two databases with equal digests hold the same data.
func tables(t testing.TB, dsn string) map[string]string {
	t.Helper()
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var names []string
	if err := db.Select(&names, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		var d struct {
			N      int    `db:"n"`
			Digest string `db:"digest"`
		}
		if err := db.Get(&d, `SELECT count(*) AS n, coalesce(md5(string_agg(t::text, E'\n' ORDER BY t::text)), '') AS digest FROM `+
			n+` t`); err != nil {
			t.Fatal(err)
		}
		out[n] = fmt.Sprintf("%d rows %s", d.N, d.Digest)
	}
	return out
}

// sameTables fails t unless got and want hold the same tables and rows,
// and want has rows in each of the tables named.
func sameTables(t testing.TB, got, want map[string]string, nonEmpty ...string) {
	t.Helper()
	for name, w := range want {
		if got[name] != w {
			t.Errorf("table %s: %s after the restore, %s before", name, got[name], w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("table %s appeared", name)
		}
	}
	for _, name := range nonEmpty {
		if strings.HasPrefix(want[name], "0 rows") {
			t.Errorf("table %s was empty before the backup: the test shows nothing of it", name)
		}
	}
}

// storedFiles reads every file the database's rows name from live, and
// fails t unless each is there with the SHA-256 its row records (none for
// export archives and gallery previews). It returns how many it read.
func storedFiles(t testing.TB, dsn string, live blob.Store) int {
	t.Helper()
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows []struct {
		Key string `db:"key"`
		Sum string `db:"sum"`
	}
	if err := db.Select(&rows, `
		SELECT blob_key AS key, checksum_sha256 AS sum FROM assets WHERE status NOT IN ('pending_upload', 'duplicate')
		UNION ALL SELECT blob_key, checksum_sha256 FROM asset_files
		UNION ALL SELECT blob_key, '' FROM exports WHERE status = 'done'
		UNION ALL SELECT watermark_key, '' FROM gallery_assets WHERE watermark_key IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		info, err := live.Stat(context.Background(), r.Key)
		if err != nil {
			t.Errorf("%s: %v", r.Key, err)
			continue
		}
		if r.Sum != "" && info.SHA256 != r.Sum {
			t.Errorf("%s has SHA-256 %s, its row says %s", r.Key, info.SHA256, r.Sum)
		}
	}
	return len(rows)
}

// liveKeys lists every object of a store.
func liveKeys(t testing.TB, s blob.Store) []string {
	t.Helper()
	var keys []string
	if err := s.(blob.Lister).List(context.Background(), func(i blob.Info) error {
		keys = append(keys, i.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// readAll reads a target's file.
func readAll(t testing.TB, tg backup.Target, key string) []byte {
	t.Helper()
	f, _, err := tg.Open(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// keyPEM is key as CHAIN_KEY_FILE holds it.
func keyPEM(t testing.TB, key ed25519.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// keyValueDSN is dsn (a URL) in lib/pq's other form, key='value' pairs.
func keyValueDSN(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	quote := func(v string) string { return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'" }
	pairs := []string{"host=" + quote(u.Hostname()), "port=" + quote(u.Port()), "user=" + quote(u.User.Username()),
		"dbname=" + quote(strings.TrimPrefix(u.Path, "/"))}
	if pw, ok := u.User.Password(); ok {
		pairs = append(pairs, "password="+quote(pw))
	}
	for k, v := range u.Query() {
		pairs = append(pairs, k+"="+quote(v[0]))
	}
	return strings.Join(pairs, " ")
}
