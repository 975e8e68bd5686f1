package server_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// visitorShare is the public answer as a visitor's page reads it.
type visitorShare struct {
	SelectionLimit *int
	Chosen         int
	Visitor        *struct {
		Name  string
		Email *string
	}
	Assets []struct {
		AssetID       string
		FavoriteCount int
		Favorited     bool
	}
}

// TestTwoClientsChooseUpToTheGallerysLimit: two clients of one gallery
// with a limit of three name themselves once and choose; a fourth choice
// is refused with a message; a client who comes back with the same token,
// or names themself again in another browser, finds their own hearts; the
// owner reads who chose what, by name. Favourites lived in the visitor's
// tab before: two people choosing looked the same, and a client coming
// back saw counts but not their own hearts.
func TestTwoClientsChooseUpToTheGallerysLimit(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg", "photos/storm.jpg", "photos/blinds.jpg", "odd/rgba8.png"))
	var ids []string
	for _, u := range ups {
		ids = append(ids, u.AssetID)
	}
	expect(t, a.do("POST", "/v1/projects/"+project+"/galleries", key,
		map[string]any{"title": "Pick three", "assetIds": ids, "selectionLimit": 0}), 400, "validation_failed")
	g := a.newGallery(key, project, map[string]any{"title": "Pick three", "password": "open sesame", "assetIds": ids, "selectionLimit": 3})
	slug, gallery := g["shareSlug"].(string), g["id"].(string)
	if g["selectionLimit"] != 3.0 {
		t.Fatalf("gallery %v, want selectionLimit 3", g)
	}

	auth := func(body map[string]any) string {
		t.Helper()
		body["password"] = "open sesame"
		r := a.viewer("POST", slug, "/auth", "", body)
		expect(t, r, 200, "")
		return r.json(t)["token"].(string)
	}
	expect(t, a.viewer("POST", slug, "/auth", "", map[string]any{"password": "open sesame", "name": strings.Repeat("x", 101)}), 400, "validation_failed")
	expect(t, a.viewer("POST", slug, "/auth", "", map[string]any{"password": "open sesame", "name": "Kim", "email": "not an address"}), 400, "validation_failed")
	kim := auth(map[string]any{"name": "Kim Lee", "email": "Kim@Example.org"})
	bo := auth(map[string]any{"name": "Bo"})
	heart := func(token, asset string, on bool) reply {
		t.Helper()
		return a.viewer("POST", slug, "/favorite", token, map[string]any{"assetId": asset, "favorite": on})
	}
	view := func(token string) visitorShare {
		t.Helper()
		r := a.viewer("GET", slug, "", token, nil)
		expect(t, r, 200, "")
		return decode[visitorShare](t, r)
	}
	hearts := func(s visitorShare) []string {
		var out []string
		for _, as := range s.Assets {
			if as.Favorited {
				out = append(out, as.AssetID)
			}
		}
		return out
	}

	for _, asset := range ids[:3] {
		expect(t, heart(kim, asset, true), 200, "")
	}
	r := heart(kim, ids[3], true)
	expect(t, r, 409, "selection_limit")
	if d := details(t, r); d["selectionLimit"] != 3.0 || !strings.Contains(r.json(t)["message"].(string), "3 photos") {
		t.Errorf("the fourth choice: %s", r.body)
	}
	expect(t, heart(kim, ids[0], true), 200, "") // choosing one again is no new choice
	expect(t, heart(bo, ids[2], true), 200, "")
	expect(t, heart(bo, ids[4], true), 200, "")

	// The same token later (the tab closed and opened again), and the
	// same person named again in another browser, see their own hearts.
	again := auth(map[string]any{"name": "kim lee", "email": " kim@example.org "})
	for _, token := range []string{kim, again} {
		s := view(token)
		if fmt.Sprint(hearts(s)) != fmt.Sprint(ids[:3]) || s.Chosen != 3 || s.SelectionLimit == nil || *s.SelectionLimit != 3 ||
			s.Visitor == nil || s.Visitor.Name == "" {
			t.Errorf("kim sees hearts %v, chosen %d of %v, as %+v; want the first three of %v", hearts(s), s.Chosen, s.SelectionLimit, s.Visitor, ids)
		}
		if s.Assets[2].FavoriteCount != 2 {
			t.Errorf("the third photo counts %d favourites, want kim's and bo's", s.Assets[2].FavoriteCount)
		}
	}
	if s := view(bo); fmt.Sprint(hearts(s)) != fmt.Sprint([]string{ids[2], ids[4]}) {
		t.Errorf("bo sees hearts %v", hearts(s))
	}
	// Unmarked from the other browser, the choice is kim's to make again.
	expect(t, heart(again, ids[1], false), 200, "")
	expect(t, heart(kim, ids[3], true), 200, "")

	bob := a.user("bob@example.org", false)
	expect(t, a.do("GET", "/v1/galleries/"+gallery+"/favorites", bob, nil), 404, "not_found")
	r = a.do("GET", "/v1/galleries/"+gallery+"/favorites", key, nil)
	expect(t, r, 200, "")
	got := decode[struct {
		Visitors []struct {
			Name, Email *string
			AssetIDs    []string
			FileNames   []string
		}
	}](t, r).Visitors
	if len(got) != 2 || got[0].Name == nil || *got[0].Name != "Bo" || got[1].Name == nil || !strings.EqualFold(*got[1].Name, "kim lee") {
		t.Fatalf("visitors %s", r.body)
	}
	if fmt.Sprint(got[0].AssetIDs) != fmt.Sprint([]string{ids[2], ids[4]}) || fmt.Sprint(got[0].FileNames) != "[storm.jpg rgba8.png]" {
		t.Errorf("bo chose %v %v", got[0].AssetIDs, got[0].FileNames)
	}
	if want := []string{ids[0], ids[2], ids[3]}; fmt.Sprint(got[1].AssetIDs) != fmt.Sprint(want) ||
		got[1].Email == nil || !strings.EqualFold(*got[1].Email, "kim@example.org") || !slices.Contains(got[1].FileNames, "blinds.jpg") {
		t.Errorf("kim chose %v %v (%v), want %v", got[1].AssetIDs, got[1].FileNames, got[1].Email, want)
	}
}
