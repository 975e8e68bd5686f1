package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// shot is a photo a pairs test ingests: its name, whether it is a raw,
// and when it was taken.
type shot struct {
	name string
	raw  bool
	at   time.Time
}

// ingestShots finalizes shots as one project's uploads, records the raws'
// content type as a camera raw's, and returns their ids; ingest is the
// caller's to run (ingestShot).
func ingestShots(t *testing.T, env *testenv.Env, owner, project uuid.UUID, shots ...shot) []uuid.UUID {
	t.Helper()
	ups := testenv.Files(len(shots))
	for i, s := range shots {
		ups[i].Filename = s.name
	}
	res := env.Finalize(t, owner, project, ups...)
	ids := make([]uuid.UUID, len(shots))
	for i, a := range res.Assets {
		ids[i] = a.AssetID
		if shots[i].raw {
			if _, err := env.DB.Exec(`UPDATE assets SET content_type = 'image/x-canon-cr2' WHERE id = $1`, ids[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ids
}

func ingestShot(ctx context.Context, env *testenv.Env, id uuid.UUID, at time.Time) error {
	return env.Store.SaveIngest(ctx, store.IngestOutput{AssetID: id, Width: 100, Height: 80, CapturedAt: &at,
		EXIF: json.RawMessage(`{}`), Quality: json.RawMessage(`{}`), HashAlgorithm: "test"})
}

func pairOf(t *testing.T, env *testenv.Env, id uuid.UUID) *uuid.UUID {
	t.Helper()
	a, err := env.Store.AssetByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a.PairAssetID
}

// TestRawAndJPEGOfOneShotArePaired ingests what a camera writing RAW+JPEG
// leaves on a card, beside files that only look like pairs: only a raw
// and a JPEG of one base name and one capture time pair, each naming the
// other, whichever is ingested first or when both are at once.
func TestRawAndJPEGOfOneShotArePaired(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	at := time.Date(2026, 9, 12, 15, 4, 5, 0, time.UTC)
	shots := []shot{
		{"IMG_0001.CR2", true, at},
		{"img_0001.jpg", false, at.Add(300 * time.Millisecond)}, // the JPEG's subseconds may differ
		{"IMG_0002.CR2", true, at},
		{"IMG_0002.JPG", false, at.Add(time.Minute)}, // another shot: the counter wrapped
		{"IMG_0003.JPG", false, at},
		{"IMG_0003.PNG", false, at}, // not a raw
		{"IMG_0004.CR2", true, at},
		{"IMG_0004.JPG", false, at},
	}
	ids := ingestShots(t, env, owner, project, shots...)

	// The owner starred the JPEG before its raw arrived.
	four := 4
	if _, err := env.Store.Rate(ctx, owner, store.RatingChange{AssetID: ids[1], Rating: &four}); err != nil {
		t.Fatal(err)
	}
	// Both halves of the last shot at once: the second must see the first.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, k := range []int{6, 7} {
		wg.Go(func() { errs[i] = ingestShot(ctx, env, ids[k], shots[k].at) })
	}
	wg.Wait()
	for i := range 6 {
		if err := ingestShot(ctx, env, ids[i], shots[i].at); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Ingest runs again: nothing changes.
	if err := ingestShot(ctx, env, ids[0], at); err != nil {
		t.Fatal(err)
	}

	want := map[int]int{0: 1, 1: 0, 6: 7, 7: 6}
	for i := range shots {
		got := pairOf(t, env, ids[i])
		j, paired := want[i]
		switch {
		case paired && (got == nil || *got != ids[j]):
			t.Errorf("%s: pairAssetId %v, want %s's %s", shots[i].name, got, shots[j].name, ids[j])
		case !paired && got != nil:
			t.Errorf("%s: paired with %s, want no pair", shots[i].name, *got)
		}
	}
	rs, err := env.Store.Ratings(ctx, owner, []uuid.UUID{ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	if r := rs[ids[0]]; r.Rating == nil || *r.Rating != 4 {
		t.Errorf("the raw's rating once paired: %+v, want the 4 stars its JPEG had", r)
	}
}

// TestDecisionOnHalfOfPairIsMadeOnBoth: a pair is one photo to cull, so a
// flag, stars or a label given to either half is the other's too, while
// notes stay each file's own and a request naming both halves gives each
// what it says.
func TestDecisionOnHalfOfPairIsMadeOnBoth(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	at := time.Date(2026, 9, 12, 15, 4, 5, 0, time.UTC)
	ids := ingestShots(t, env, owner, project, shot{"DSC_1.NEF", true, at}, shot{"DSC_1.JPG", false, at}, shot{"DSC_2.JPG", false, at})
	for _, id := range ids {
		if err := ingestShot(ctx, env, id, at); err != nil {
			t.Fatal(err)
		}
	}
	raw, jpeg, other := ids[0], ids[1], ids[2]
	if p := pairOf(t, env, raw); p == nil || *p != jpeg {
		t.Fatalf("raw paired with %v, want %s", p, jpeg)
	}
	ratings := func() map[uuid.UUID]store.Rating {
		t.Helper()
		rs, err := env.Store.Ratings(ctx, owner, ids)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}

	three, red, note := 3, "red", "check focus"
	if _, err := env.Store.Rate(ctx, owner, store.RatingChange{AssetID: raw, Rating: &three, ColorLabel: &red, Notes: &note}); err != nil {
		t.Fatal(err)
	}
	rs := ratings()
	if r := rs[jpeg]; r.Rating == nil || *r.Rating != 3 || r.ColorLabel == nil || *r.ColorLabel != "red" || r.Notes != "" {
		t.Errorf("JPEG after rating the raw: %+v, want 3 stars, red, no notes", r)
	}
	if _, ok := rs[other]; ok {
		t.Errorf("a photo outside the pair was rated: %+v", rs[other])
	}

	yes := true
	got, err := env.Store.CullActions(ctx, owner, project, []store.RatingChange{{AssetID: jpeg, Rejected: &yes}})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := got[raw]; !ok || !r.Rejected {
		t.Errorf("cull:applyAction on the JPEG answered the raw's rating %+v (present %v), want rejected", r, ok)
	}
	if r := ratings()[raw]; !r.Rejected || r.Picked {
		t.Errorf("raw after rejecting the JPEG: %+v, want rejected", r)
	}

	one, five := 1, 5
	if _, err := env.Store.CullActions(ctx, owner, project, []store.RatingChange{
		{AssetID: raw, Rating: &one}, {AssetID: jpeg, Rating: &five},
	}); err != nil {
		t.Fatal(err)
	}
	rs = ratings()
	if *rs[raw].Rating != 1 || *rs[jpeg].Rating != 5 {
		t.Errorf("naming both halves: raw %d, JPEG %d stars, want 1 and 5", *rs[raw].Rating, *rs[jpeg].Rating)
	}
}

// TestExportTakesTheHalvesOfPairsAsked: choosing a pair's tile names one
// half; the export brings the other with it, or leaves out the raws or
// the JPEGs as its pairs setting says. A photo without a pair is never
// left out.
func TestExportTakesTheHalvesOfPairsAsked(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	at := time.Date(2026, 9, 12, 15, 4, 5, 0, time.UTC)
	ids := ingestShots(t, env, owner, project,
		shot{"A.RAF", true, at}, shot{"A.JPG", false, at}, shot{"B.JPG", false, at}, shot{"C.RAF", true, at})
	for _, id := range ids {
		if err := ingestShot(ctx, env, id, at); err != nil {
			t.Fatal(err)
		}
	}
	raw, jpeg, lone, loneRaw := ids[0], ids[1], ids[2], ids[3]
	named := &store.Export{ProjectID: project, AssetIDs: store.UUIDs{lone, jpeg, loneRaw}}
	for _, c := range []struct {
		pairs string
		want  []uuid.UUID
	}{
		{"", []uuid.UUID{lone, jpeg, raw, loneRaw}},
		{"both", []uuid.UUID{lone, jpeg, raw, loneRaw}},
		{"raw", []uuid.UUID{lone, raw, loneRaw}},
		{"jpeg", []uuid.UUID{lone, jpeg, loneRaw}},
	} {
		got, err := env.Store.ExportPlan(ctx, named, c.pairs)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("pairs %q: plan %v, want %v", c.pairs, got, c.want)
		}
	}
	all, err := env.Store.ExportPlan(ctx, &store.Export{ProjectID: project}, "raw")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || slices.Contains(all, jpeg) {
		t.Errorf("the whole project with pairs raw: %v, want everything but %s", all, jpeg)
	}
}
