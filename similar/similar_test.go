package similar_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/lib/pq"

	"lightbox/similar"
	"lightbox/store"
	"lightbox/testsupport/seed"
	"lightbox/testsupport/testenv"
)

func TestSameRankingAsSQLAndKeptFresh(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ctx := context.Background()
	_, project := env.Project(t)
	s := seed.Fill(t, env, project, 3000)
	x := &similar.Index{Store: env.Store}

	// compare checks the in-memory ranking against the SQL one: the same
	// assets in the same order with the same scores.
	compare := func(asset uuid.UUID, limit int) []similar.Hit {
		t.Helper()
		got, err := x.Similar(ctx, project, asset, s.Model, limit)
		if err != nil {
			t.Fatal(err)
		}
		want, err := env.Store.SimilarAssets(ctx, asset, s.Model, limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(g similar.Hit, w store.Similar) bool {
			return g.AssetID == w.AssetID && g.Score == w.Score
		}) {
			t.Fatalf("asset %s: in memory %v\nSQL %v", asset, got, want)
		}
		return got
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var embedded []seed.Asset
	for _, a := range s.Assets {
		if a.Embedded {
			embedded = append(embedded, a)
		}
	}
	for range 40 {
		compare(embedded[rng.IntN(len(embedded))].ID, 1+rng.IntN(100))
	}
	// Neighbours exist: a burst's frames are close.
	if hits := compare(embedded[0].ID, 5); hits[0].Score < 0.9 {
		t.Fatalf("nearest neighbour at %v: the seed has no neighbours", hits[0].Score)
	}

	// A vector stored after the copy was made counts at once.
	me := embedded[1].ID
	var vec pq.Float32Array
	hits := compare(me, 3)
	if err := env.DB.Get(&vec, `SELECT vector FROM embeddings WHERE asset_id = $1`, me); err != nil {
		t.Fatal(err)
	}
	fresh := s.Assets[slices.IndexFunc(s.Assets, func(a seed.Asset) bool { return a.Listed && !a.Embedded })].ID
	if _, err := env.Store.SaveEmbedding(ctx, fresh, s.Model, vec); err != nil {
		t.Fatal(err)
	}
	if got := compare(me, 3); got[0].AssetID != fresh {
		t.Fatalf("the new twin is not first: %v", got)
	}
	// A deleted asset is gone at once, though its vector is still in memory.
	if _, err := env.DB.Exec(`DELETE FROM assets WHERE id = $1`, fresh); err != nil {
		t.Fatal(err)
	}
	if got := compare(me, 3); got[0].AssetID != hits[0].AssetID {
		t.Fatalf("after the delete: %v, want %v first again", got, hits[0])
	}
}
