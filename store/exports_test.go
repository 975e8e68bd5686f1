package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// startedExport records an export with its job, running as trackJobs
// records it, and starts two runs of it: the first was handed back at a
// stop and the second took the export over.
func startedExport(t *testing.T, env *testenv.Env) (e *store.Export, first, second uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	owner, project := env.Project(t)
	e = &store.Export{ID: uuid.New(), ProjectID: project, UserID: owner, Preset: "web", Settings: json.RawMessage(`{}`)}
	env.Tx(t, func(tx *store.Store) error { return app.RecordExport(ctx, tx, e) })
	env.RecordJob(t, store.JobUpdate{ID: *e.JobID, Status: store.JobRunning, Attempt: 1})
	var runs [2]uuid.UUID
	for i := range runs {
		started, ok, err := env.Store.StartExport(ctx, e.ID)
		if err != nil || !ok || started.RunToken == nil {
			t.Fatalf("start %d: %v %v", i+1, ok, err)
		}
		runs[i] = *started.RunToken
	}
	if runs[0] == runs[1] {
		t.Fatal("two runs share a token")
	}
	return e, runs[0], runs[1]
}

// The first run writes after the second took the export over: each write
// is refused as stale and changes nothing, and the second run goes on.
func TestStaleExportRunChangesNothing(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	e, first, second := startedExport(t, env)
	st := env.Store

	stale := func(when string) {
		t.Helper()
		if _, err := st.FailExport(ctx, e.ID, first, store.JobQueued, "interrupted", "x", nil); !errors.Is(err, store.ErrStaleRun) {
			t.Errorf("%s: the first run's failure: %v, want ErrStaleRun", when, err)
		}
		if running, err := st.ExportProgress(ctx, e.ID, first, store.ExportStep{Progress: 0.9}); running || !errors.Is(err, store.ErrStaleRun) {
			t.Errorf("%s: the first run's progress: running %v, %v; want ErrStaleRun", when, running, err)
		}
		if _, err := st.FinishExport(ctx, e.ID, first, "exports/first", 1, nil); !errors.Is(err, store.ErrStaleRun) {
			t.Errorf("%s: the first run's finish: %v, want ErrStaleRun", when, err)
		}
	}

	stale("while the second runs")
	got, err := st.ExportByID(ctx, e.ID)
	if err != nil || got.Status != store.JobRunning || got.Progress != 0 || got.ErrorCode != nil || got.BlobKey != nil {
		t.Fatalf("after the first run's writes: %+v %v; want the second run's export untouched", got, err)
	}
	if running, err := st.ExportProgress(ctx, e.ID, second, store.ExportStep{Progress: 0.5}); !running || err != nil {
		t.Fatalf("the second run's progress: running %v, %v", running, err)
	}
	if err := st.DiscardAfter(ctx, []string{"exports/first", "exports/second"}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	done, err := st.FinishExport(ctx, e.ID, second, "exports/second", 1, nil)
	if err != nil || done.Status != store.JobDone || *done.BlobKey != "exports/second" {
		t.Fatalf("the second run's finish: %+v %v", done, err)
	}

	stale("once the second is done")
	if got, _ := st.ExportByID(ctx, e.ID); got.Status != store.JobDone || *got.BlobKey != "exports/second" || got.ErrorCode != nil {
		t.Fatalf("after the first run's late writes: %+v", got)
	}
}

// A cancel, of the export or only of its batch, is told to the run that
// holds the export; a stale run is told only that it is stale.
func TestExportCancelReachesTheRunThatHoldsIt(t *testing.T) {
	for _, c := range []struct {
		name   string
		cancel func(st *store.Store, e *store.Export) error
	}{
		{"export", func(st *store.Store, e *store.Export) error {
			_, _, err := st.CancelExport(context.Background(), e.ID)
			return err
		}},
		{"batch", func(st *store.Store, e *store.Export) error {
			_, _, err := st.CancelBatch(context.Background(), *e.BatchID)
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := testenv.New(t)
			ctx := context.Background()
			e, first, second := startedExport(t, env)
			st := env.Store
			if err := c.cancel(st, e); err != nil {
				t.Fatal(err)
			}
			if _, err := st.FinishExport(ctx, e.ID, first, "exports/first", 1, nil); !errors.Is(err, store.ErrStaleRun) {
				t.Errorf("the first run's finish: %v, want ErrStaleRun", err)
			}
			if running, err := st.ExportProgress(ctx, e.ID, second, store.ExportStep{Progress: 0.5}); running || err != nil {
				t.Errorf("the second run's progress: running %v, %v; want canceled", running, err)
			}
			if _, err := st.FinishExport(ctx, e.ID, second, "exports/second", 1, nil); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the second run's finish: %v, want ErrNotFound", err)
			}
			if _, err := st.FailExport(ctx, e.ID, second, store.JobQueued, "interrupted", "x", nil); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the second run's failure: %v, want ErrNotFound", err)
			}
			if got, _ := st.ExportByID(ctx, e.ID); got.Status != store.JobCanceled || got.BlobKey != nil {
				t.Errorf("export %s, file %v; want canceled without a file", got.Status, got.BlobKey)
			}
		})
	}
}

// A run's archive is a discard until FinishExport names it, in the same
// transaction; an archive whose discard is due, which the sweeper may be
// deleting, is not named, and a refused finish leaves the discard.
func TestFinishExportClaimsItsArchive(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	st := env.Store
	e, first, second := startedExport(t, env)
	discards := func() []string {
		t.Helper()
		var keys []string
		if err := env.DB.Select(&keys, `SELECT blob_key FROM blob_discards ORDER BY 1`); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	if err := st.DiscardAfter(ctx, []string{"exports/first", "exports/second"}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishExport(ctx, e.ID, first, "exports/first", 1, nil); !errors.Is(err, store.ErrStaleRun) {
		t.Fatalf("the first run's finish: %v, want ErrStaleRun", err)
	}
	env.Age(t, "blob_discards", "url_expires_at", time.Second, "blob_key = 'exports/second'")
	if _, err := st.FinishExport(ctx, e.ID, second, "exports/second", 1, nil); !errors.Is(err, store.ErrDiscardDue) {
		t.Fatalf("a finish whose archive's discard is due: %v, want ErrDiscardDue", err)
	}
	if got, _ := st.ExportByID(ctx, e.ID); got.Status != store.JobRunning || got.BlobKey != nil {
		t.Fatalf("after a refused finish: export %s, file %v", got.Status, got.BlobKey)
	}
	if keys := discards(); len(keys) != 2 {
		t.Fatalf("discards after refused finishes: %v, want both", keys)
	}
	if err := st.DiscardAfter(ctx, []string{"exports/second"}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishExport(ctx, e.ID, second, "exports/second", 1, nil); err != nil {
		t.Fatal(err)
	}
	if keys := discards(); len(keys) != 1 || keys[0] != "exports/first" {
		t.Fatalf("discards once the second run finished: %v, want only the first run's", keys)
	}
}

// A run that yields, or is handed back, leaves its steps to the next run,
// which goes on from them under the plan the first fixed; a start after
// the export failed for good begins again.
func TestExportStepsOutliveTheirRun(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	e, _, second := startedExport(t, env)
	st := env.Store
	plan := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	if got, err := st.SetExportPlan(ctx, e.ID, second, plan); err != nil || len(got) != 3 || got[0] != plan[0] {
		t.Fatalf("plan %v %v", got, err)
	}
	skip := []store.ExportSkip{{AssetID: plan[1], Reason: "duplicate"}}
	if running, err := st.ExportProgress(ctx, e.ID, second, store.ExportStep{ItemsDone: 2, Pages: 1, Skipped: skip, Progress: 0.66}); !running || err != nil {
		t.Fatalf("step: running %v, %v", running, err)
	}

	third, ok, err := st.StartExport(ctx, e.ID)
	if err != nil || !ok || *third.RunToken == second {
		t.Fatalf("the third run: %v %v", ok, err)
	}
	if third.ItemsDone != 2 || third.Pages != 1 || len(third.Plan) != 3 || third.Progress < 0.65 || string(third.Skipped) == "[]" {
		t.Fatalf("the third run starts from %d items, %d pages, plan %v, progress %v, skipped %s; want the second's steps",
			third.ItemsDone, third.Pages, third.Plan, third.Progress, third.Skipped)
	}
	// The plan is fixed once: a later run's plan does not replace it.
	if got, err := st.SetExportPlan(ctx, e.ID, *third.RunToken, []uuid.UUID{uuid.New()}); err != nil || len(got) != 3 {
		t.Fatalf("a second plan %v %v; want the first kept", got, err)
	}

	if _, err := st.FailExport(ctx, e.ID, *third.RunToken, store.JobFailed, "task_failed", "x", nil); err != nil {
		t.Fatal(err)
	}
	again, ok, err := st.StartExport(ctx, e.ID)
	if err != nil || !ok || again.ItemsDone != 0 || again.Pages != 0 || again.Plan != nil || again.Progress != 0 || string(again.Skipped) != "[]" {
		t.Fatalf("a start after failing for good: %+v %v %v; want a fresh start", again, ok, err)
	}
}
