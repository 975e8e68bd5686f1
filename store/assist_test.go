package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// TestCullPhotosReadGroupsFacesAndRatings reads a project's processed
// photos as assisted culling does: a burst and a duplicate group (not a
// moment), faces where they were looked for, and the person's rating.
func TestCullPhotosReadGroupsFacesAndRatings(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	on := true
	if _, err := env.Store.UpdateProject(ctx, owner, project, store.ProjectInput{DetectFaces: &on}); err != nil {
		t.Fatal(err)
	}
	ps := env.AssetsIn(t, owner, project, store.AssetCull, store.AssetCull, store.AssetSearch, store.AssetCull, store.AssetUploaded)
	members := func(ids ...uuid.UUID) []store.ClusterMember {
		var out []store.ClusterMember
		for i, id := range ids {
			out = append(out, store.ClusterMember{AssetID: id, Rank: i + 1, Role: "candidate", Signals: json.RawMessage(`{}`)})
		}
		return out
	}
	run := env.StartClusterRun(t, project)
	if _, _, err := env.Store.ReplaceClusters(ctx, project, run, []store.NewCluster{
		{Kind: "burst", Winner: ps[0], Members: members(ps[0], ps[1])},
		{Kind: "duplicate_group", Winner: ps[1], Members: members(ps[1], ps[2])},
		{Kind: "moment", Winner: ps[0], Members: members(ps[0], ps[1], ps[2], ps[3])},
	}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.SaveFaces(ctx, store.FaceScan{AssetID: ps[3], Model: "test", Width: 10, Height: 10},
		[]store.Face{{Sharpness: 40, EyesClosed: true, Clipped: new(0.75)}, {Sharpness: 90, Clipped: new(0.25)}}); err != nil {
		t.Fatal(err)
	}
	yes := true
	for _, ch := range []store.RatingChange{{AssetID: ps[0], Picked: &yes}, {AssetID: ps[1], Rejected: &yes, Assisted: true},
		{AssetID: ps[2], Starred: &yes}} {
		if _, err := env.Store.Rate(ctx, owner, ch); err != nil {
			t.Fatal(err)
		}
	}
	other, _ := env.Project(t)
	if _, err := env.Store.Rate(ctx, other, store.RatingChange{AssetID: ps[3], Rejected: &yes}); err != nil {
		t.Fatal(err)
	}

	photos, err := env.Store.CullPhotos(ctx, project, owner)
	if err != nil {
		t.Fatal(err)
	}
	if len(photos) != 4 {
		t.Fatalf("%d photos, want the 4 processed", len(photos))
	}
	by := map[uuid.UUID]store.CullPhoto{}
	for _, p := range photos {
		by[p.ID] = p
	}
	first, second, third, fourth := by[ps[0]], by[ps[1]], by[ps[2]], by[ps[3]]
	if first.Burst == nil || first.Duplicate != nil || second.Burst == nil || second.Duplicate == nil || *second.Burst != *first.Burst ||
		third.Burst != nil || third.Duplicate == nil || *third.Duplicate != *second.Duplicate || fourth.Burst != nil || fourth.Duplicate != nil {
		t.Fatalf("groups: %+v %+v %+v %+v", first, second, third, fourth)
	}
	// Of two faces' clipped shares, the lower is the middle one.
	if f := fourth.Faces; f == nil || f.Count != 2 || f.EyesClosed != 1 || f.MinSharpness == nil || *f.MinSharpness != 40 ||
		f.Clipped == nil || *f.Clipped != 0.25 || first.Faces != nil {
		t.Fatalf("faces: %+v, %+v", fourth.Faces, first.Faces)
	}
	if r := first.Rating; r == nil || !r.HandDecision() || r.UserID != owner {
		t.Fatalf("a hand pick: %+v", r)
	}
	if r := second.Rating; r == nil || !r.Rejected || !r.Assisted || r.HandDecision() {
		t.Fatalf("an assisted reject: %+v", r)
	}
	if r := third.Rating; r == nil || r.Decided() || fourth.Rating != nil {
		t.Fatalf("a star alone decides nothing, another's rating is theirs: %+v, %+v", r, fourth.Rating)
	}
	if string(first.Quality) != "{}" {
		t.Fatalf("quality %s", first.Quality)
	}
}

// TestHandDecisionsSinceTheReset learns from a person's hand decisions in
// all their projects, and forgets those before a reset.
func TestHandDecisionsSinceTheReset(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	other, err := env.Store.CreateProject(ctx, owner, "Another", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps := env.AssetsIn(t, owner, project, store.AssetCull, store.AssetCull, store.AssetUploaded)
	more := env.AssetsIn(t, owner, other.ID, store.AssetAI)
	one, red := 1, "red"
	yes := true
	for _, ch := range []store.RatingChange{{AssetID: ps[0], Rating: &one}, {AssetID: ps[1], Rejected: &yes, Assisted: true},
		{AssetID: ps[2], Picked: &yes}, {AssetID: more[0], ColorLabel: &red}} {
		if _, err := env.Store.Rate(ctx, owner, ch); err != nil {
			t.Fatal(err)
		}
	}
	decided := func() []uuid.UUID {
		t.Helper()
		photos, err := env.Store.HandDecisions(ctx, owner, 100)
		if err != nil {
			t.Fatal(err)
		}
		var ids []uuid.UUID
		for _, p := range photos {
			ids = append(ids, p.ID)
		}
		return ids
	}
	// The latest first; neither the assisted reject nor the photo not
	// processed yet.
	if got := decided(); len(got) != 2 || got[0] != more[0] || got[1] != ps[0] {
		t.Fatalf("hand decisions %v, want %v then %v", got, more[0], ps[0])
	}
	p, err := env.Store.ResetCullPreferences(ctx, owner)
	if err != nil || p.LearnSince == nil || len(p.Strictness) != 0 {
		t.Fatalf("reset: %+v, %v", p, err)
	}
	if got := decided(); len(got) != 0 {
		t.Fatalf("after the reset: %v", got)
	}
	if _, err := env.Store.Rate(ctx, owner, store.RatingChange{AssetID: ps[1], Picked: &yes}); err != nil {
		t.Fatal(err)
	}
	if got := decided(); len(got) != 1 || got[0] != ps[1] {
		t.Fatalf("a pick after the reset: %v", got)
	}

	half := 0.5
	p, err = env.Store.SetCullStrictness(ctx, owner, map[string]*float64{"blurry": &half, "faceSoft": nil})
	if v, off := p.Strictness["faceSoft"]; err != nil || *p.Strictness["blurry"] != 0.5 || !off || v != nil || p.LearnSince == nil {
		t.Fatalf("set: %+v, %v", p, err)
	}
	if got, err := env.Store.CullPreferences(ctx, owner); err != nil || len(got.Strictness) != 2 {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	if got, err := env.Store.CullPreferences(ctx, uuid.New()); err != nil || got.LearnSince != nil || len(got.Strictness) != 0 {
		t.Fatalf("someone without preferences: %+v, %v", got, err)
	}
}
