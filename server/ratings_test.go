package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"lightbox/events"
)

// find is asset id of a list.
func find(assets []ratedAsset, id uuid.UUID) ratedAsset {
	for _, a := range assets {
		if a.ID == id.String() {
			return a
		}
	}
	return ratedAsset{}
}

func TestRatingAndCulling(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	as := processed(t, a, key, project, []string{"Canon", "Canon", "Canon"}, [][]float32{{1, 0}, {0, 1}, {1, 1}})
	rate := func(asset uuid.UUID, body any) reply {
		return a.do("POST", "/v1/assets/"+asset.String()+"/ratings", key, body)
	}

	r := rate(as[0], map[string]any{"rating": 4, "picked": true, "notes": "sharp"})
	expect(t, r, 200, "")
	if got := r.json(t); got["rating"] != 4.0 || got["picked"] != true || got["rejected"] != false || got["assetId"] != as[0].String() {
		t.Fatalf("rating: %s", r.body)
	}
	expect(t, rate(as[1], map[string]any{"rejected": true, "rating": 1}), 200, "")
	if got := ids(a.assetList(key, project, "picked=true")); got != as[0].String() {
		t.Fatalf("picked: %s", got)
	}
	if got := ids(a.assetList(key, project, "rejected=true")); got != as[1].String() {
		t.Fatalf("rejected: %s", got)
	}
	if got := ids(a.assetList(key, project, "ratingMin=2")); got != as[0].String() {
		t.Fatalf("ratingMin=2: %s", got)
	}
	if got := ids(a.assetList(key, project, "picked=false&rejected=false")); got != as[2].String() {
		t.Fatalf("neither: %s", got)
	}
	all := a.assetList(key, project, "")
	first, third := find(all, as[0]), find(all, as[2])
	if len(all) != 3 || first.MyRating == nil || *first.MyRating.Rating != 4 || first.MyRating.Notes != "sharp" || third.MyRating != nil {
		t.Fatalf("myRating: %+v", all)
	}
	// Rejecting a picked photo un-picks it; clearing the rating keeps the rest.
	r = rate(as[0], map[string]any{"rejected": true, "rating": nil})
	expect(t, r, 200, "")
	if got := r.json(t); got["picked"] != false || got["rejected"] != true || got["rating"] != nil || got["notes"] != "sharp" {
		t.Fatalf("after rejecting: %s", r.body)
	}

	// Another person's view of the same routes.
	bob := a.user("bob@example.org", false)
	expect(t, a.do("POST", "/v1/assets/"+as[0].String()+"/ratings", bob, map[string]any{"rating": 5}), 404, "not_found")
	expect(t, a.do("PATCH", "/v1/assets/"+as[0].String(), bob, map[string]any{"notes": "mine"}), 404, "not_found")
	expect(t, a.do("POST", "/v1/projects/"+project+"/cull:applyAction", bob,
		map[string]any{"actions": []any{map[string]any{"assetId": as[0], "picked": true}}}), 404, "not_found")

	for _, body := range []any{
		map[string]any{"rating": 0}, map[string]any{"rating": 6}, map[string]any{"rating": 2.5},
		map[string]any{"picked": true, "rejected": true}, map[string]any{},
		map[string]any{"notes": strings.Repeat("n", 5001)},
	} {
		expect(t, rate(as[2], body), 400, "validation_failed")
	}
	expect(t, rate(as[2], map[string]any{"stars": 3}), 400, "invalid_json")
	if got := find(a.assetList(key, project, ""), as[2]); got.MyRating != nil {
		t.Fatalf("a refused rating was stored: %+v", got.MyRating)
	}
	for _, q := range []string{"picked=yes", "ratingMin=0", "ratingMin=6"} {
		expect(t, a.do("GET", "/v1/projects/"+project+"/assets?"+q, key, nil), 400, "validation_failed")
	}

	// Every rating went out as asset.updated for the other open views.
	evs, _, err := events.NewPublisher(a.env.Redis, events.PublisherOptions{}).Since(context.Background(), uuid.MustParse(project), 0)
	if err != nil {
		t.Fatal(err)
	}
	ratings := 0
	for _, ev := range evs {
		var data struct{ MyRating *struct{ Rejected bool } }
		json.Unmarshal(ev.Data, &data)
		if ev.Name == events.AssetUpdated && data.MyRating != nil {
			ratings++
		}
	}
	if ratings != 3 {
		t.Errorf("%d rating events, want 3", ratings)
	}
}

func TestCullActionsAllOrNothing(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	as := processed(t, a, key, project, []string{"Canon", "Canon"}, [][]float32{{1, 0}, {0, 1}})
	other := a.newProject(key)
	theirs := processed(t, a, key, other, []string{"Nikon"}, [][]float32{{1, 1}})
	cull := func(actions ...map[string]any) reply {
		return a.do("POST", "/v1/projects/"+project+"/cull:applyAction", key, map[string]any{"actions": actions})
	}

	r := cull(map[string]any{"assetId": as[0], "picked": true, "rating": 5},
		map[string]any{"assetId": as[1], "rejected": true}, map[string]any{"assetId": as[0], "starred": true})
	expect(t, r, 200, "")
	var out struct {
		OK              bool
		UpdatedAssetIDs []string
	}
	json.Unmarshal(r.body, &out)
	if !out.OK || strings.Join(out.UpdatedAssetIDs, ",") != as[0].String()+","+as[1].String() {
		t.Fatalf("cull: %s", r.body)
	}
	if m := find(a.assetList(key, project, ""), as[0]).MyRating; m == nil || !m.Picked || !m.Starred || *m.Rating != 5 {
		t.Fatalf("first asset after cull: %+v", m)
	}

	// An asset of another project, or a bad action: nothing changes.
	r = cull(map[string]any{"assetId": as[1], "picked": true}, map[string]any{"assetId": theirs[0], "picked": true})
	expect(t, r, 400, "validation_failed")
	expect(t, cull(map[string]any{"assetId": as[1], "picked": true}, map[string]any{"assetId": as[0], "rating": 9}), 400, "validation_failed")
	expect(t, cull(), 400, "validation_failed")
	many := make([]map[string]any, 1001)
	for i := range many {
		many[i] = map[string]any{"assetId": as[1], "picked": true}
	}
	expect(t, cull(many...), 400, "too_many_actions")
	if m := find(a.assetList(key, project, ""), as[1]).MyRating; m == nil || m.Picked || !m.Rejected {
		t.Fatalf("a refused cull changed a rating: %+v", m)
	}
}

func TestPatchAsset(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	as := processed(t, a, key, project, []string{"Canon"}, [][]float32{{1, 0}})
	path := "/v1/assets/" + as[0].String()

	r := a.do("PATCH", path, key, map[string]any{"keywords": []string{" beach ", "Sunset", "beach", "sunset"}, "notes": "for the album",
		"iptc": map[string]any{"headline": "Evening"}, "flags": map[string]any{"color": "red", "stack": 2}})
	expect(t, r, 200, "")
	got := decode[ratedAsset](t, r)
	if strings.Join(got.Keywords, ",") != "beach,Sunset" || got.Notes != "for the album" || got.IPTC["headline"] != "Evening" ||
		got.Flags["color"] != "red" || got.Flags["readiness"] != "search" {
		t.Fatalf("after PATCH: %s", r.body)
	}
	// Flags merge, and null removes one; the other fields stay.
	expect(t, a.do("PATCH", path, key, map[string]any{"flags": map[string]any{"color": nil, "label": "keep"}}), 200, "")
	r = a.do("GET", path, key, nil)
	got = ratedAsset{}
	json.Unmarshal(r.body, &got)
	if _, ok := got.Flags["color"]; ok || got.Flags["label"] != "keep" || got.Flags["stack"] != 2.0 || got.Notes != "for the album" {
		t.Fatalf("after merging flags: %s", r.body)
	}

	for _, c := range []struct {
		body any
		code string
	}{
		{map[string]any{"flags": map[string]any{"readiness": "ai"}}, "validation_failed"},
		{map[string]any{"notes": strings.Repeat("n", 10000)}, "validation_failed"},
		{map[string]any{"keywords": []string{""}}, "validation_failed"},
		{map[string]any{"iptc": []string{"x"}}, "validation_failed"},
		{map[string]any{}, "validation_failed"},
		{map[string]any{"rating": 3}, "invalid_json"},
	} {
		expect(t, a.do("PATCH", path, key, c.body), 400, c.code)
	}
	r = a.do("GET", path, key, nil)
	got = ratedAsset{}
	json.Unmarshal(r.body, &got)
	if got.Flags["readiness"] != "search" || got.Notes != "for the album" {
		t.Fatalf("a refused PATCH changed the asset: %s", r.body)
	}
}
