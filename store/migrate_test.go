package store_test

import (
	"context"
	"slices"
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

// TestPendingMigrationsListsWithoutApplying: what `lightbox migrate
// --dry-run` prints, on a new install, a database two migrations behind
// and one up to date, and that asking changes nothing.
func TestPendingMigrationsListsWithoutApplying(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	all, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	versions := func(ms []store.Migration) []int {
		var out []int
		for _, m := range ms {
			out = append(out, m.Version)
		}
		return out
	}
	if _, err := env.DB.ExecContext(ctx, "DROP SCHEMA "+env.Schema+" CASCADE; CREATE SCHEMA "+env.Schema); err != nil {
		t.Fatal(err)
	}

	version, pending, err := env.Store.PendingMigrations(ctx)
	if err != nil || version != 0 || !slices.Equal(versions(pending), versions(all)) {
		t.Fatalf("new install: version %d, pending %v, %v; want 0 and every migration", version, versions(pending), err)
	}
	var made bool
	if err := env.DB.GetContext(ctx, &made, `SELECT to_regclass('schema_migrations') IS NOT NULL`); err != nil || made {
		t.Fatalf("asking made schema_migrations (%v, %v)", made, err)
	}

	behind := all[len(all)-3].Version
	if _, err := env.Store.MigrateTo(ctx, nil, behind); err != nil {
		t.Fatal(err)
	}
	version, pending, err = env.Store.PendingMigrations(ctx)
	if err != nil || version != behind || !slices.Equal(versions(pending), versions(all[len(all)-2:])) {
		t.Fatalf("two behind: version %d, pending %v, %v; want %d and %v", version, versions(pending), err, behind, versions(all[len(all)-2:]))
	}
	if n := env.Count(t, `SELECT count(*) FROM schema_migrations`); n != len(all)-2 {
		t.Fatalf("%d migrations recorded after asking, want the %d there before", n, len(all)-2)
	}

	if _, err := env.Store.Migrate(ctx, nil); err != nil {
		t.Fatal(err)
	}
	newest := all[len(all)-1].Version
	if version, pending, err = env.Store.PendingMigrations(ctx); err != nil || version != newest || len(pending) != 0 {
		t.Fatalf("up to date: version %d, pending %v, %v; want %d and none", version, versions(pending), err, newest)
	}
}
