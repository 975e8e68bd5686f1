package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// TestChangesOverTheSameAssetsAtOnce sends two requests' worth of changes
// over the same photos at once, one in the other's reverse order, as two
// tabs or a script might: ratings, and adding to and taking from one
// gallery. Each must go through, none stopped as a deadlock.
func TestChangesOverTheSameAssetsAtOnce(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	assets := env.Upload(t, project, testenv.Files(150)...)
	reversed := slices.Clone(assets)
	slices.Reverse(reversed)
	g := galleryOf(t, env, project, "both-ways", false)

	twice := func(what string, fn func(i int) error) {
		t.Helper()
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = fn(i) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}
	for range 5 {
		twice("rating", func(i int) error {
			changes := make([]store.RatingChange, len(assets))
			for k, id := range [][]uuid.UUID{assets, reversed}[i] {
				picked := i == 0
				changes[k] = store.RatingChange{AssetID: id, Picked: &picked}
			}
			_, err := env.Store.CullActions(ctx, owner, project, changes)
			return err
		})
		twice("adding to the gallery", func(i int) error {
			_, err := addAssets(env, g.Gallery.ID, [][]uuid.UUID{assets, reversed}[i])
			return err
		})
		twice("adding and taking out", func(i int) error {
			if i == 0 {
				_, err := addAssets(env, g.Gallery.ID, assets)
				return err
			}
			_, err := env.Store.RemoveGalleryAssets(ctx, g.Gallery.ID, reversed)
			return err
		})
	}
}

// TestColorLabelsAreTheFive has Postgres itself refuse a colour label
// other than Lightroom's five, whoever writes the row.
func TestColorLabelsAreTheFive(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	assets := env.Upload(t, project, testenv.Files(1)...)
	for _, l := range store.ColorLabels {
		r, err := env.Store.Rate(ctx, owner, store.RatingChange{AssetID: assets[0], ColorLabel: &l})
		if err != nil || r.ColorLabel == nil || *r.ColorLabel != l {
			t.Fatalf("label %s: %+v, %v", l, r, err)
		}
	}
	for _, l := range []string{"orange", "Red", "none", ""} {
		if _, err := env.Store.Rate(ctx, owner, store.RatingChange{AssetID: assets[0], ColorLabel: &l}); err == nil {
			t.Errorf("label %q was stored", l)
		}
	}
	r, err := env.Store.Rate(ctx, owner, store.RatingChange{AssetID: assets[0], ClearColorLabel: true})
	if err != nil || r.ColorLabel != nil {
		t.Fatalf("cleared: %+v, %v", r, err)
	}
}

// TestAssistedChangesLeaveHandDecisions: an assisted change never
// overrides a decision made by hand, even one made while it waits, and a
// hand change makes the assistant's mark the person's own.
func TestAssistedChangesLeaveHandDecisions(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	ps := env.AssetsIn(t, owner, project, store.AssetCull, store.AssetCull, store.AssetCull)
	yes, no := true, false
	if _, err := env.Store.Rate(ctx, owner, store.RatingChange{AssetID: ps[0], Picked: &yes}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.Rate(ctx, owner, store.RatingChange{AssetID: ps[0], Rejected: &yes, Assisted: true}); !errors.Is(err, store.ErrHandDecision) {
		t.Fatalf("an assisted reject of a hand pick: %v", err)
	}
	// A note alone is no decision: the assistant's mark stays its own.
	r, err := env.Store.Rate(ctx, owner, store.RatingChange{AssetID: ps[1], Rejected: &yes, Assisted: true})
	if err != nil || !r.Assisted {
		t.Fatalf("an assisted reject: %+v, %v", r, err)
	}
	note := "check the horizon"
	if r, err = env.Store.Rate(ctx, owner, store.RatingChange{AssetID: ps[1], Notes: &note}); err != nil || !r.Assisted || !r.Rejected {
		t.Fatalf("after a note: %+v, %v", r, err)
	}
	if r, err = env.Store.Rate(ctx, owner, store.RatingChange{AssetID: ps[1], Rejected: &no}); err != nil || r.Assisted || r.Decided() {
		t.Fatalf("after an un-reject by hand: %+v, %v", r, err)
	}

	// A hand pick holds the row while an assisted reject of it waits.
	picked, release := make(chan error, 1), make(chan struct{})
	go func() {
		picked <- env.Store.WithTx(ctx, func(tx *store.Store) error {
			if _, err := tx.Rate(ctx, owner, store.RatingChange{AssetID: ps[2], Picked: &yes}); err != nil {
				return err
			}
			picked <- nil
			<-release
			return nil
		})
	}()
	if err := <-picked; err != nil {
		t.Fatal(err)
	}
	culled := make(chan map[uuid.UUID]store.Rating, 1)
	go func() {
		out, err := env.Store.CullActions(ctx, owner, project, []store.RatingChange{
			{AssetID: ps[2], Rejected: &yes, Assisted: true}, {AssetID: ps[1], Rejected: &yes, Assisted: true}})
		if err != nil {
			t.Error(err)
		}
		culled <- out
	}()
	testenv.Eventually(t, "the assisted reject waiting on the hand pick", time.Minute, func() bool {
		var n int
		env.DB.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO ratings AS r%'`)
		return n > 0
	})
	close(release)
	if err := <-picked; err != nil {
		t.Fatal(err)
	}
	out := <-culled
	if _, ok := out[ps[2]]; ok || !out[ps[1]].Rejected || !out[ps[1]].Assisted {
		t.Fatalf("cull: %+v, want the hand pick left alone", out)
	}
	ratings, err := env.Store.Ratings(ctx, owner, ps[2:])
	if r := ratings[ps[2]]; err != nil || !r.Picked || r.Rejected || r.Assisted {
		t.Fatalf("the hand pick after the assisted reject: %+v, %v", r, err)
	}
}
