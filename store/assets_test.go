package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// An upload takes bytes while it is pending, under a row lock that orders it
// against finalize: it is recorded then, and only then.
func TestLockPendingUpload(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	data := []byte("bytes")
	id := env.Upload(t, project, testenv.Upload{Data: data})[0]

	inTx := func(f func(tx *store.Store) (bool, error)) (bool, error) {
		var ok bool
		err := env.Store.WithTx(ctx, func(tx *store.Store) error {
			var err error
			ok, err = f(tx)
			return err
		})
		return ok, err
	}
	lock := func(id uuid.UUID) (bool, error) {
		return inTx(func(tx *store.Store) (bool, error) { return tx.LockPendingUpload(ctx, id) })
	}
	record := func(id uuid.UUID, sum string) (bool, error) {
		return inTx(func(tx *store.Store) (bool, error) { return tx.RecordPendingUpload(ctx, id, sum, 5) })
	}
	checksum := func() string {
		a, err := env.Store.AssetByID(ctx, id)
		if err != nil || a.ChecksumSHA256 == nil {
			t.Fatalf("asset %+v %v", a, err)
		}
		return *a.ChecksumSHA256
	}

	if ok, err := lock(id); err != nil || !ok {
		t.Fatalf("a pending upload does not take bytes: %v", err)
	}
	other, sum := testenv.Checksum([]byte("other")), testenv.Checksum(data)
	if ok, err := record(id, other); err != nil || !ok || checksum() != other {
		t.Fatalf("a pending upload was not recorded: %v", err)
	}
	if ok, err := record(id, sum); err != nil || !ok || checksum() != sum {
		t.Fatalf("an upload sent again was not recorded: %v", err)
	}
	finalize(t, env, owner, project, nil, store.FinalizeItem{AssetID: id, Checksum: sum})
	if ok, err := lock(id); err != nil || ok {
		t.Fatalf("a finalized asset still takes bytes: %v", err)
	}
	if ok, err := record(id, other); err != nil || ok || checksum() != sum {
		t.Fatalf("a finalized asset took a record: %v", err)
	}
	if _, err := lock(uuid.New()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("locking an unknown asset: %v", err)
	}
	if _, err := record(uuid.New(), other); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("recording an unknown asset: %v", err)
	}
}

func TestExpiredUploadsFailOnce(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	_, project := env.Project(t)
	stale, fresh := uuid.New(), uuid.New()
	for id, expires := range map[uuid.UUID]time.Time{stale: time.Now().Add(-time.Hour), fresh: time.Now().Add(time.Hour)} {
		if err := env.Store.AddPendingAssets(ctx, project, []store.NewAsset{{ID: id, Filename: "a.jpg", BlobKey: "k/" + id.String()}}, expires); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := env.Store.ExpiredUploads(ctx, time.Now(), 10)
	if err != nil || !reflect.DeepEqual(keys, []string{"k/" + stale.String()}) {
		t.Fatalf("expired %v, %v", keys, err)
	}
	if keys, _ := env.Store.ExpiredUploads(ctx, time.Now(), 10); len(keys) != 0 {
		t.Fatalf("expired again %v", keys)
	}
	if env.AssetStatus(t, stale) != store.AssetFailed || env.AssetStatus(t, fresh) != store.AssetPendingUpload {
		t.Fatal("the wrong upload expired")
	}
}

// createImport imports two URLs into project.
func createImport(t *testing.T, env *testenv.Env, owner, project uuid.UUID) ([]store.NewImport, *store.Batch, []store.Job) {
	t.Helper()
	items := []store.NewImport{
		{AssetID: uuid.New(), URL: "https://example.com/a.jpg", Filename: "a.jpg", BlobKey: "k/a"},
		{AssetID: uuid.New(), URL: "https://example.com/b.jpg", Filename: "b.jpg", BlobKey: "k/b"},
	}
	var downloads []store.Job
	env.Tx(t, func(tx *store.Store) (err error) {
		downloads, err = app.RecordImport(context.Background(), tx, owner, project, items)
		return err
	})
	b, err := env.Store.Batch(context.Background(), owner, *downloads[0].BatchID)
	if err != nil {
		t.Fatal(err)
	}
	return items, b, downloads
}

// An import's downloads finalize into the import's own batch.
func TestImportFinalizesIntoItsBatch(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	items, b, downloads := createImport(t, env, owner, project)
	if b.Kind != "import" || b.Total != 2 || len(downloads) != 2 {
		t.Fatalf("import %+v %+v", b, downloads)
	}
	data := []byte("downloaded")
	if err := env.Store.RecordDownload(ctx, owner, items[0].AssetID, testenv.Checksum(data), int64(len(data)), "image/jpeg", store.Limits{}); err != nil {
		t.Fatal(err)
	}
	env.FinishJob(t, downloads[0].ID)

	var res *store.FinalizeResult
	env.Tx(t, func(tx *store.Store) (err error) {
		res, err = app.AcceptUploads(ctx, tx, owner, project,
			[]store.FinalizeItem{{AssetID: items[0].AssetID, Checksum: testenv.Checksum(data)}}, &b.ID)
		return err
	})
	if res.BatchID == nil || *res.BatchID != b.ID || len(res.Accepted) != 1 || len(res.Jobs) != 1 {
		t.Fatalf("finalize into the import batch: %+v", res)
	}
	got, _ := env.Store.Batch(ctx, owner, b.ID)
	if got.Total != 3 || got.Completed != 1 || got.Status != "running" {
		t.Fatalf("import batch after a finalize %+v", got)
	}
	if a, _ := env.Store.AssetByID(ctx, items[0].AssetID); a.ContentType != "image/jpeg" || *a.UploadSize != int64(len(data)) {
		t.Fatalf("downloaded asset %+v", a)
	}
}

func TestExportKeepsItsAssetsInTheOrderNamed(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	res := env.Finalize(t, owner, project, testenv.Files(3)...)
	a, b, c := res.Assets[0].AssetID, res.Assets[1].AssetID, res.Assets[2].AssetID

	create := func(ids store.UUIDs) *store.Export {
		t.Helper()
		e := &store.Export{ID: uuid.New(), ProjectID: project, UserID: owner, Preset: "web", Settings: json.RawMessage(`{}`), AssetIDs: ids}
		env.Tx(t, func(tx *store.Store) error { return app.RecordExport(ctx, tx, e) })
		if e.BatchID == nil || e.JobID == nil {
			t.Fatalf("created export %+v", e)
		}
		got, err := env.Store.ExportByID(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	named := create(store.UUIDs{c, a})
	if !reflect.DeepEqual(named.AssetIDs, store.UUIDs{c, a}) {
		t.Fatalf("asset ids read back as %v", named.AssetIDs)
	}
	plan, err := env.Store.ExportPlan(ctx, named, "")
	if err != nil || !reflect.DeepEqual(plan, []uuid.UUID{c, a}) {
		t.Fatalf("plan of a named export %v %v", plan, err)
	}
	items, err := env.Store.ExportItems(ctx, named, plan)
	if err != nil || len(items) != 2 || items[0].AssetID != c || items[1].AssetID != a {
		t.Fatalf("items of a named export %+v %v", items, err)
	}

	all := create(nil)
	if all.AssetIDs != nil {
		t.Fatalf("an export of everything has asset ids %v", all.AssetIDs)
	}
	if plan, _ := env.Store.ExportPlan(ctx, all, ""); len(plan) != 3 {
		t.Fatalf("an export of everything covers %d assets", len(plan))
	}

	_, elsewhere := env.Project(t)
	stranger := env.Upload(t, elsewhere, testenv.Upload{Data: []byte("x")})[0]
	foreign, err := env.Store.ForeignAssets(ctx, project, []uuid.UUID{b, stranger, uuid.Nil})
	if err != nil || !reflect.DeepEqual(foreign, []uuid.UUID{stranger, uuid.Nil}) {
		t.Fatalf("foreign %v %v", foreign, err)
	}
}
