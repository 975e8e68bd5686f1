package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// Unscanned lists the processed photos of a project that detects faces
// whose faces were not looked for, a page at a time in id order.
func TestUnscannedPhotos(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	otherOwner, other := env.Project(t)
	ids := env.AssetsIn(t, owner, project, store.AssetCull, store.AssetSearch, store.AssetAI, store.AssetAI,
		store.AssetUploaded, store.AssetFailed)
	env.AssetsIn(t, otherOwner, other, store.AssetCull)

	unscanned := func(after uuid.UUID, limit int) []uuid.UUID {
		t.Helper()
		var got []uuid.UUID
		if err := env.Store.WithTx(ctx, func(tx *store.Store) error {
			var err error
			got, err = tx.Unscanned(ctx, project, after, limit)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := unscanned(uuid.Nil, 10); len(got) != 0 {
		t.Fatalf("%d photos to scan in a project without faces", len(got))
	}
	on := true
	if _, err := env.Store.UpdateProject(ctx, owner, project, store.ProjectInput{DetectFaces: &on}); err != nil {
		t.Fatal(err)
	}
	if saved, err := env.Store.SaveFaces(ctx, store.FaceScan{AssetID: ids[3], Model: "m", Width: 10, Height: 10}, nil); err != nil || saved == nil {
		t.Fatalf("save a scan without faces: %v %v", saved, err)
	}
	want := slices.Clone(ids[:3])
	slices.SortFunc(want, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	if got := unscanned(uuid.Nil, 10); !slices.Equal(got, want) {
		t.Fatalf("unscanned %v, want %v", got, want)
	}
	first := unscanned(uuid.Nil, 2)
	if !slices.Equal(first, want[:2]) {
		t.Fatalf("first page %v, want %v", first, want[:2])
	}
	if rest := unscanned(first[1], 2); !slices.Equal(rest, want[2:]) {
		t.Fatalf("second page %v, want %v", rest, want[2:])
	}
	err := env.Store.WithTx(ctx, func(tx *store.Store) error {
		_, err := tx.Unscanned(ctx, uuid.New(), uuid.Nil, 10)
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown project: %v", err)
	}
}
