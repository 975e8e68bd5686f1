package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

var errStop = errors.New("stop")

// writer is the process id of the one session writing to table.
func writer(env *testenv.Env, table string) (int, error) {
	var pid int
	// Tests' databases are clones of one template, so their tables share
	// OIDs: only this database's locks are this test's.
	err := env.DB.Get(&pid, `SELECT pid FROM pg_locks
		WHERE locktype = 'relation' AND relation = $1::regclass AND mode = 'RowExclusiveLock' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, table)
	return pid, err
}

// waitForWaiter waits until a session waits for a lock that session holder
// holds.
func waitForWaiter(env *testenv.Env, holder int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var waiting int
		if err := env.DB.Get(&waiting, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, holder); err != nil {
			return err
		}
		if waiting > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("no session ever waited for the lock holder")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exists reports whether a user with email is visible outside any transaction.
func exists(t *testing.T, st *store.Store, email string) bool {
	t.Helper()
	_, err := st.UserByEmail(context.Background(), email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func TestWithTxCommitsOnNil(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	err := env.Store.WithTx(ctx, func(tx *store.Store) error {
		if _, err := tx.CreateUser(ctx, "ana@example.org", false); err != nil {
			return err
		}
		// Not visible outside until the commit.
		if exists(t, env.Store, "ana@example.org") {
			t.Error("an uncommitted row is visible outside the transaction")
		}
		// Visible to the transaction's own reads.
		_, err := tx.UserByEmail(ctx, "ana@example.org")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !exists(t, env.Store, "ana@example.org") {
		t.Fatal("the committed user is missing")
	}
}

func TestWithTxRollsBackOnError(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	err := env.Store.WithTx(ctx, func(tx *store.Store) error {
		if _, err := tx.CreateUser(ctx, "ana@example.org", false); err != nil {
			return err
		}
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("WithTx = %v, want fn's error", err)
	}
	if exists(t, env.Store, "ana@example.org") {
		t.Fatal("a rolled-back user was kept")
	}
}

func TestWithTxNestedJoinsTheOuterTransaction(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()

	// The inner call commits nothing on its own: the outer failure undoes it.
	err := env.Store.WithTx(ctx, func(tx *store.Store) error {
		err := tx.WithTx(ctx, func(inner *store.Store) error {
			if inner != tx {
				t.Error("the nested call got a new transaction")
			}
			_, err := inner.CreateUser(ctx, "ana@example.org", false)
			return err
		})
		if err != nil {
			return err
		}
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("WithTx = %v", err)
	}
	if exists(t, env.Store, "ana@example.org") {
		t.Fatal("work of a nested call survived the outer rollback")
	}

	// An inner error reaches the outer fn, which decides.
	err = env.Store.WithTx(ctx, func(tx *store.Store) error {
		if _, err := tx.CreateUser(ctx, "bob@example.org", false); err != nil {
			return err
		}
		if err := tx.WithTx(ctx, func(*store.Store) error { return errStop }); !errors.Is(err, errStop) {
			t.Errorf("inner error = %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !exists(t, env.Store, "bob@example.org") {
		t.Fatal("the outer commit lost its work")
	}
}

// A method that opens its own transaction joins the caller's instead.
func TestMethodsJoinTheCallersTransaction(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	res := env.Finalize(t, owner, project, testenv.Upload{Data: []byte("one")})
	job := res.Jobs[0]

	err := env.Store.WithTx(ctx, func(tx *store.Store) error {
		if _, _, err := tx.CancelBatch(ctx, *res.BatchID); err != nil {
			return err
		}
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Fatal(err)
	}
	j, err := env.Store.JobByID(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != store.JobQueued {
		t.Fatalf("job is %s after a rolled-back cancel, want queued", j.Status)
	}
}

// A transaction hands over the queued jobs it recorded once it commits,
// all in one call; one that rolls back hands over nothing.
func TestCommitHandsOverTheJobsRecorded(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	var handed [][]store.Job
	st := env.Store.WithHandOver(func(_ context.Context, jobs []store.Job) { handed = append(handed, jobs) })
	insert := func(tx *store.Store) {
		t.Helper()
		for range 2 {
			p := tasks.ExportPayload{Job: tasks.NewJob(project), ExportID: uuid.New()}
			if _, err := jobs.Insert(ctx, tx, p, jobs.NewBatch(owner, store.BatchExport)); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := st.WithTx(ctx, func(tx *store.Store) error {
		insert(tx)
		if len(handed) != 0 {
			t.Error("jobs handed over before the commit")
		}
		return nil
	})
	if err != nil || len(handed) != 1 || len(handed[0]) != 2 {
		t.Fatalf("handed over %v (%v), want both jobs in one call after the commit", handed, err)
	}
	err = st.WithTx(ctx, func(tx *store.Store) error { insert(tx); return errStop })
	if !errors.Is(err, errStop) || len(handed) != 1 {
		t.Fatalf("a rolled-back transaction handed over %v (%v)", handed[1:], err)
	}
	// Outside a transaction, the insert commits and hands over at once.
	insert(st)
	if len(handed) != 3 {
		t.Fatalf("handed over %d times, want once more per insert outside a transaction", len(handed))
	}
	// The Store it was made from hands nothing over.
	insert(env.Store)
	if len(handed) != 3 {
		t.Fatal("a Store without a hand-over handed jobs over")
	}
}

// Two finalizes of the same new bytes at once, each inside a caller's
// transaction, collide on the project's checksums: the one that waits
// runs again under its savepoint and finds the other's asset, so the
// caller's transaction goes on.
func TestFinalizeInsideATransactionSurvivesACollision(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	data := []byte("the same bytes twice")
	ids := env.Upload(t, project, testenv.Upload{Data: data}, testenv.Upload{Data: data})
	first := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- env.Store.WithTx(ctx, func(tx *store.Store) error {
			if _, err := tx.FinalizeUploads(ctx, owner, project, []store.FinalizeItem{{AssetID: ids[0], Checksum: testenv.Checksum(data)}}); err != nil {
				return err
			}
			// Hold the commit until the second finalize waits on it.
			pid, err := writer(env, "assets")
			close(first)
			if err == nil {
				err = waitForWaiter(env, pid)
			}
			return err
		})
	}()
	<-first
	var res *store.FinalizeResult
	err := env.Store.WithTx(ctx, func(tx *store.Store) error {
		var err error
		res, err = tx.FinalizeUploads(ctx, owner, project, []store.FinalizeItem{{AssetID: ids[1], Checksum: testenv.Checksum(data)}})
		return err
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err != nil || res.Assets[0].Status != store.AssetDuplicate || *res.Assets[0].DuplicateOf != ids[0] {
		t.Fatalf("the second finalize: %+v, %v; want a duplicate of the first", res, err)
	}
}
