package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/store"
)

// The builders below record fixtures through the store's own methods, so a
// fixture is always a state the service itself can reach.

// Project records a new user and a project of theirs.
func (e *Env) Project(t testing.TB) (owner, project uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	u, err := e.Store.CreateUser(ctx, uuid.NewString()+"@example.com", false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Store.CreateProject(ctx, u.ID, "Shoot", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID, p.ID
}

// Upload is a file a builder records; zero fields take defaults.
type Upload struct {
	ID       uuid.UUID // new when zero
	Filename string    // "a.jpg" when empty
	Data     []byte    // the bytes whose size and SHA-256 are recorded; the same bytes twice make a duplicate
	BlobKey  string    // "originals/<project>/<id>" when empty
}

// Files returns n uploads of distinct bytes, so none is a duplicate.
func Files(n int) []Upload {
	uploads := make([]Upload, n)
	for i := range uploads {
		uploads[i] = Upload{Data: []byte(fmt.Sprintf("file %d of %s", i, uuid.NewString()))}
	}
	return uploads
}

// Checksum is the lowercase hex SHA-256 of data, as finalize expects it.
func Checksum(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Upload records files whose bytes have arrived and are not yet finalized
// (status pending_upload), one statement each so they sort in the order
// given, and returns their ids.
func (e *Env) Upload(t testing.TB, project uuid.UUID, uploads ...Upload) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	ids := make([]uuid.UUID, len(uploads))
	for i, u := range uploads {
		if u.ID == uuid.Nil {
			u.ID = uuid.New()
		}
		if u.Filename == "" {
			u.Filename = "a.jpg"
		}
		if u.BlobKey == "" {
			u.BlobKey = "originals/" + project.String() + "/" + u.ID.String()
		}
		a := store.NewAsset{ID: u.ID, Filename: u.Filename, ContentType: "image/jpeg", ByteSize: int64(len(u.Data)), BlobKey: u.BlobKey}
		if err := e.Store.AddPendingAssets(ctx, project, []store.NewAsset{a}, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := e.Store.RecordUpload(ctx, u.ID, Checksum(u.Data), int64(len(u.Data))); err != nil {
			t.Fatal(err)
		}
		ids[i] = u.ID
	}
	return ids
}

// Finalize uploads files and finalizes them in one call, as the API does:
// each new file becomes 'uploaded' with an ingest job, a batch and a place
// in the attestation queue. The jobs are recorded, not enqueued, as when
// the enqueue after the commit is lost: the sweep hands them over.
func (e *Env) Finalize(t testing.TB, owner, project uuid.UUID, uploads ...Upload) *store.FinalizeResult {
	t.Helper()
	ids := e.Upload(t, project, uploads...)
	items := make([]store.FinalizeItem, len(ids))
	for i, id := range ids {
		items[i] = store.FinalizeItem{AssetID: id, Checksum: Checksum(uploads[i].Data)}
	}
	var res *store.FinalizeResult
	e.Tx(t, func(tx *store.Store) (err error) {
		res, err = app.AcceptUploads(context.Background(), tx, owner, project, items, nil)
		return err
	})
	return res
}

// Tx runs fn in one transaction of the test's Store and fails the test
// when it returns an error. Jobs fn records are not handed over: the
// Store has no dispatcher.
func (e *Env) Tx(t testing.TB, fn func(tx *store.Store) error) {
	t.Helper()
	if err := e.Store.WithTx(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// RecordJob writes one state of a job as the worker's tracker does
// (store.RecordJobStates) and returns the job as written, or nil when it
// was canceled or does not exist.
func (e *Env) RecordJob(t testing.TB, st store.JobUpdate) *store.Job {
	t.Helper()
	jobs, _, err := e.Store.RecordJobStates(context.Background(), []store.JobUpdate{st})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) == 0 {
		return nil
	}
	return &jobs[0]
}

// FinishJob records a job run to success, as the worker does.
func (e *Env) FinishJob(t testing.TB, job uuid.UUID) *store.Batch {
	t.Helper()
	ctx := context.Background()
	e.RecordJob(t, store.JobUpdate{ID: job, Status: store.JobRunning, Attempt: 1})
	_, b, err := e.Store.JobFinished(ctx, job, store.JobDone, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FailJob records a job that failed for good with code after attempts
// tries, as the worker does: an ingest or download failure fails its asset.
func (e *Env) FailJob(t testing.TB, job uuid.UUID, attempts int, code string) *store.Batch {
	t.Helper()
	ctx := context.Background()
	e.RecordJob(t, store.JobUpdate{ID: job, Status: store.JobRunning, Attempt: attempts})
	j, b, err := e.Store.JobFinished(ctx, job, store.JobFailed, code, "it failed")
	if err != nil {
		t.Fatal(err)
	}
	if j.AssetID != nil && (j.Type == "asset:ingest" || j.Type == "asset:download") {
		if err := e.Store.FailAsset(ctx, *j.AssetID, code, "it failed"); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// AssetStatus reads an asset's status whoever owns it.
func (e *Env) AssetStatus(t testing.TB, asset uuid.UUID) string {
	t.Helper()
	a, err := e.Store.AssetByID(context.Background(), asset)
	if err != nil {
		t.Fatal(err)
	}
	return a.Status
}

// StartClusterRun schedules and starts the project's next cluster run, as
// the worker does, and returns its number.
func (e *Env) StartClusterRun(t testing.TB, project uuid.UUID) int64 {
	t.Helper()
	ctx := context.Background()
	r, err := e.Store.ScheduleCluster(ctx, project, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.MarkClusterEnqueued(ctx, project, r.Run); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.Store.StartClusterRun(ctx, project, r.Run); !ok || err != nil {
		t.Fatalf("run %d did not start: %v", r.Run, err)
	}
	return r.Run
}
