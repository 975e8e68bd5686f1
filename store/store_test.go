package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"lightbox/internal/testenv"
	"lightbox/store"
)

var errStop = errors.New("stop")

// writer is the process id of the one session writing to table.
func writer(env *testenv.Env, table string) (int, error) {
	var pid int
	err := env.DB.Get(&pid, `SELECT pid FROM pg_locks
		WHERE locktype = 'relation' AND relation = $1::regclass AND mode = 'RowExclusiveLock' AND granted`, table)
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
	res := env.Finalize(t, owner, project, nil, testenv.Upload{Data: []byte("one")})
	job := res.NewJobs[0].ID

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
