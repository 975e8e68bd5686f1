package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/store"
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

// TestColorLabels sets and clears the caller's colour labels through a
// rating and cull:applyAction, filters the list and the search by them,
// and checks that one person's labels are theirs alone.
func TestColorLabels(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	as := processed(t, a, key, project, []string{"Canon", "Canon", "Canon"}, [][]float32{{1, 0}, {0, 1}, {1, 1}})
	rate := func(asset uuid.UUID, body any) reply {
		return a.do("POST", "/v1/assets/"+asset.String()+"/ratings", key, body)
	}
	cull := func(actions ...map[string]any) reply {
		return a.do("POST", "/v1/projects/"+project+"/cull:applyAction", key, map[string]any{"actions": actions})
	}
	// labels is each asset's label in the list, "-" for none.
	labels := func(query string) string {
		t.Helper()
		var out []string
		for _, id := range as {
			got := "?"
			for _, x := range a.assetList(key, project, query) {
				if x.ID != id.String() {
					continue
				}
				got = "-"
				if x.MyRating != nil && x.MyRating.ColorLabel != nil {
					got = *x.MyRating.ColorLabel
				}
			}
			out = append(out, got)
		}
		return strings.Join(out, ",")
	}

	r := rate(as[0], map[string]any{"colorLabel": "red"})
	expect(t, r, 200, "")
	if got := r.json(t); got["colorLabel"] != "red" || got["rating"] != nil || got["picked"] != false {
		t.Fatalf("a label alone: %s", r.body)
	}
	expect(t, rate(as[1], map[string]any{"colorLabel": "yellow", "rating": 3}), 200, "")
	// Another field leaves the label as it is.
	r = rate(as[0], map[string]any{"picked": true})
	expect(t, r, 200, "")
	if got := r.json(t); got["colorLabel"] != "red" || got["picked"] != true {
		t.Fatalf("a pick after the label: %s", r.body)
	}
	expect(t, cull(map[string]any{"assetId": as[1], "colorLabel": "blue"}, map[string]any{"assetId": as[2], "colorLabel": "purple", "rating": 2}), 200, "")
	if got := labels(""); got != "red,blue,purple" {
		t.Fatalf("labels after cull:applyAction: %s", got)
	}
	if m := find(a.assetList(key, project, ""), as[1]).MyRating; m == nil || m.Rating == nil || *m.Rating != 3 {
		t.Fatalf("a label changed the stars: %+v", m)
	}

	// null clears a label, and only it, by either route.
	r = rate(as[0], map[string]any{"colorLabel": nil})
	expect(t, r, 200, "")
	if got := r.json(t); got["colorLabel"] != nil || got["picked"] != true {
		t.Fatalf("after clearing: %s", r.body)
	}
	expect(t, cull(map[string]any{"assetId": as[2], "colorLabel": nil}, map[string]any{"assetId": as[0], "colorLabel": "green"}), 200, "")
	if got := labels(""); got != "green,blue,-" {
		t.Fatalf("labels after clearing one and setting another: %s", got)
	}
	if m := find(a.assetList(key, project, ""), as[2]).MyRating; m == nil || m.Rating == nil || *m.Rating != 2 {
		t.Fatalf("clearing the label cleared the stars: %+v", m)
	}

	// Anything else is refused, naming the field; in a batch, nothing changes.
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"colorLabel": "orange"}, "colorLabel"},
		{map[string]any{"colorLabel": "Red"}, "colorLabel"},
		{map[string]any{"colorLabel": ""}, "colorLabel"},
		{map[string]any{"colorLabel": "none"}, "colorLabel"},
		{map[string]any{"colorLabel": 6}, "colorLabel"},
	} {
		r := rate(as[2], c.body)
		expect(t, r, 400, "validation_failed")
		if got := fields(t, r)[c.field]; got == nil {
			t.Errorf("%v: the answer does not name %s: %s", c.body, c.field, r.body)
		}
	}
	r = rate(as[2], map[string]any{"colorLabel": "pink"})
	if got := fields(t, r)["colorLabel"]; got != "must be red, yellow, green, blue, purple or null" {
		t.Errorf("the problem with pink: %v", got)
	}
	r = cull(map[string]any{"assetId": as[2], "colorLabel": "red"}, map[string]any{"assetId": as[1], "colorLabel": "pink"})
	expect(t, r, 400, "validation_failed")
	if got := fields(t, r); got["actions[1].colorLabel"] == nil || len(got) != 1 {
		t.Errorf("a bad action's field: %s", r.body)
	}
	if got := labels(""); got != "green,blue,-" {
		t.Fatalf("a refused batch changed labels: %s", got)
	}

	// The list's filter, a comma list with none for the unlabelled.
	for _, c := range []struct{ query, want string }{
		{"colorLabel=green", "green,?,?"},
		{"colorLabel=blue,green", "green,blue,?"},
		{"colorLabel=none", "?,?,-"},
		{"colorLabel=blue,none", "?,blue,-"},
		{"colorLabel=red", "?,?,?"},
		{"colorLabel=green&ratingMin=3", "?,?,?"},
		{"colorLabel=blue&ratingMin=3", "?,blue,?"},
	} {
		if got := labels(c.query); got != c.want {
			t.Errorf("%s: %s, want %s", c.query, got, c.want)
		}
	}
	for _, q := range []string{"colorLabel=orange", "colorLabel=red,", "colorLabel=RED", "colorLabel=red,,blue"} {
		r := a.do("GET", "/v1/projects/"+project+"/assets?"+q, key, nil)
		expect(t, r, 400, "validation_failed")
		if fields(t, r)["colorLabel"] == nil {
			t.Errorf("%s: the answer does not name colorLabel: %s", q, r.body)
		}
	}

	// The search's filter: a list of the same names.
	search := func(body any) string {
		t.Helper()
		r := a.do("POST", "/v1/projects/"+project+"/search", key, body)
		expect(t, r, 200, "")
		var got []string
		for _, h := range decode[struct{ Results []struct{ AssetID string } }](t, r).Results {
			got = append(got, fmt.Sprint(slices.Index(as, uuid.MustParse(h.AssetID))))
		}
		return strings.Join(got, ",")
	}
	// Captured a minute apart: newest first.
	for _, c := range []struct {
		labels []string
		want   string
	}{
		{[]string{"green"}, "0"},
		{[]string{"green", "blue"}, "1,0"},
		{[]string{"none"}, "2"},
		{[]string{"purple"}, ""},
		{[]string{}, "2,1,0"},
	} {
		if got := search(map[string]any{"filters": map[string]any{"colorLabel": c.labels}}); got != c.want {
			t.Errorf("search for %v: %q, want %q", c.labels, got, c.want)
		}
	}
	if got := search(map[string]any{"q": "canon", "filters": map[string]any{"colorLabel": []string{"blue"}}}); got != "1" {
		t.Errorf("search canon in blue: %q", got)
	}
	r = a.do("POST", "/v1/projects/"+project+"/search", key, map[string]any{"filters": map[string]any{"colorLabel": []string{"red", "teal"}}})
	expect(t, r, 400, "validation_failed")
	if fields(t, r)["filters.colorLabel"] == nil {
		t.Errorf("a bad search label: %s", r.body)
	}
	expect(t, a.do("POST", "/v1/projects/"+project+"/search", key, map[string]any{"filters": map[string]any{"colorLabel": "red"}}), 400, "validation_failed")

	// Another person's label of the same photo is theirs: it neither shows
	// in the caller's rating nor matches the caller's filters.
	ctx := context.Background()
	cai, err := a.env.Store.CreateUser(ctx, "cai@example.org", false)
	if err != nil {
		t.Fatal(err)
	}
	red := "red"
	if _, err := a.env.Store.Rate(ctx, cai.ID, store.RatingChange{AssetID: as[2], ColorLabel: &red}); err != nil {
		t.Fatal(err)
	}
	if got := labels(""); got != "green,blue,-" {
		t.Errorf("labels after another person's: %s", got)
	}
	if got := labels("colorLabel=red"); got != "?,?,?" {
		t.Errorf("another person's red label matched: %s", got)
	}
	if got := search(map[string]any{"filters": map[string]any{"colorLabel": []string{"none"}}}); got != "2" {
		t.Errorf("another person's label hid the unlabelled photo: %q", got)
	}
	// And someone without the project sees nothing of it and cannot label it.
	bob := a.user("bob@example.org", false)
	expect(t, a.do("POST", "/v1/assets/"+as[0].String()+"/ratings", bob, map[string]any{"colorLabel": "red"}), 404, "not_found")
	expect(t, a.do("GET", "/v1/projects/"+project+"/assets?colorLabel=green", bob, nil), 404, "not_found")
	expect(t, a.do("POST", "/v1/projects/"+project+"/cull:applyAction", bob,
		map[string]any{"actions": []any{map[string]any{"assetId": as[0], "colorLabel": "red"}}}), 404, "not_found")

	// Each label change went out to the project's other views with the label.
	evs, _, err := events.NewPublisher(a.env.Redis, events.PublisherOptions{}).Since(ctx, uuid.MustParse(project), 0)
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, ev := range evs {
		var data struct {
			AssetID  uuid.UUID
			MyRating *struct{ ColorLabel *string }
		}
		json.Unmarshal(ev.Data, &data)
		if ev.Name != events.AssetUpdated || data.MyRating == nil {
			continue
		}
		l := "-"
		if data.MyRating.ColorLabel != nil {
			l = *data.MyRating.ColorLabel
		}
		sent = append(sent, fmt.Sprintf("%d:%s", slices.Index(as, data.AssetID), l))
	}
	if got := strings.Join(sent, " "); got != "0:red 1:yellow 0:red 1:blue 2:purple 0:- 2:- 0:green" {
		t.Errorf("rating events: %s", got)
	}
}
