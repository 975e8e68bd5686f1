package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"

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
