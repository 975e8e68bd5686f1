package store_test

import (
	"context"
	"sync"
	"testing"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

func TestMigrateTwiceAppliesNothingNew(t *testing.T) {
	env := testenv.New(t)
	done, err := env.Store.Migrate(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 0 {
		t.Fatalf("second run applied %v, want nothing", done)
	}
}

func TestMigrateConcurrentStartsApplyEachVersionOnce(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	// Start from an empty schema so the concurrent runs have real work to race on.
	if _, err := env.DB.ExecContext(ctx, "DROP SCHEMA "+env.Schema+" CASCADE; CREATE SCHEMA "+env.Schema); err != nil {
		t.Fatal(err)
	}
	all, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}

	const starts = 4
	applied := make([][]int, starts)
	errs := make([]error, starts)
	var wg sync.WaitGroup
	for i := range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := store.Open(ctx, env.DSN)
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			applied[i], errs[i] = s.Migrate(ctx, nil)
		}()
	}
	wg.Wait()

	total := 0
	for i := range starts {
		if errs[i] != nil {
			t.Fatalf("start %d: %v", i, errs[i])
		}
		total += len(applied[i])
	}
	if total != len(all) {
		t.Fatalf("%d migrations applied across %d starts, want each of %d exactly once", total, starts, len(all))
	}
	var n int
	if err := env.DB.GetContext(ctx, &n, "SELECT count(*) FROM schema_migrations"); err != nil {
		t.Fatal(err)
	}
	if n != len(all) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, len(all))
	}
	var head int
	if err := env.DB.GetContext(ctx, &head, "SELECT count(*) FROM chain_head"); err != nil {
		t.Fatal(err)
	}
	if head != 1 {
		t.Fatalf("chain_head has %d rows, want exactly one", head)
	}
}
