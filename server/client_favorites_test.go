package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/store"
)

// TestClientFavoriteFilter: the owner's list keeps the photos clients
// favourited, in any gallery of the project or in one; a page at a time as
// well; a gallery of another project or another person is refused by name,
// as is a value that is neither "any" nor a gallery id; every choice is
// published as gallery.updated on the project's stream.
func TestClientFavoriteFilter(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg", "photos/storm.jpg", "photos/blinds.jpg", "odd/rgba8.png"))
	var assets []string
	for _, u := range ups {
		assets = append(assets, u.AssetID)
	}
	first := a.newGallery(key, project, map[string]any{"title": "Ceremony", "assetIds": assets[:3]})
	second := a.newGallery(key, project, map[string]any{"title": "Party", "assetIds": assets[2:]})
	heart := func(g map[string]any, name string, chosen ...string) {
		t.Helper()
		slug := g["shareSlug"].(string)
		r := a.viewer("POST", slug, "/auth", "", map[string]any{"name": name})
		expect(t, r, 200, "")
		token := r.json(t)["token"].(string)
		for _, asset := range chosen {
			expect(t, a.viewer("POST", slug, "/favorite", token, map[string]any{"assetId": asset, "favorite": true}), 200, "")
		}
	}
	heart(first, "Kim Lee", assets[0], assets[2])
	heart(first, "Bo", assets[2])
	heart(second, "Bo", assets[4])

	sorted := func(s []string) string {
		s = slices.Clone(s)
		slices.Sort(s)
		return strings.Join(s, ",")
	}
	for _, c := range []struct{ query, want string }{
		{"clientFavorite=any", sorted([]string{assets[0], assets[2], assets[4]})},
		{"clientFavorite=" + first["id"].(string), sorted([]string{assets[0], assets[2]})},
		{"clientFavorite=" + second["id"].(string), assets[4]},
		{"clientFavorite=" + second["id"].(string) + "&picked=true", ""},
	} {
		if got := sorted(strings.Split(ids(a.assetList(key, project, c.query)), ",")); strings.Trim(got, ",") != c.want {
			t.Errorf("%s: %s, want %s", c.query, got, c.want)
		}
	}
	// The search takes the same filter, over the photos ready for it.
	for _, id := range assets {
		if err := a.env.Store.SaveIngest(context.Background(), store.IngestOutput{AssetID: uuid.MustParse(id), Width: 100, Height: 80,
			EXIF: json.RawMessage(`{}`), Quality: json.RawMessage(`{}`), HashAlgorithm: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	r := a.do("POST", "/v1/projects/"+project+"/search", key, map[string]any{"filters": map[string]any{"clientFavorite": first["id"]}})
	expect(t, r, 200, "")
	var found []string
	for _, h := range decode[struct{ Results []struct{ AssetID string } }](t, r).Results {
		found = append(found, h.AssetID)
	}
	if sorted(found) != sorted([]string{assets[0], assets[2]}) {
		t.Errorf("search with the first gallery's favourites: %v", found)
	}
	if got := walkAssets(t, a, key, project, "clientFavorite=any&sort=filename", 1); sorted(got) != sorted([]string{assets[0], assets[2], assets[4]}) {
		t.Errorf("clientFavorite=any a page at a time: %v", got)
	}

	// Each choice told the project's streams, so a count on screen can follow.
	evs, _, err := events.NewPublisher(a.env.Redis, events.PublisherOptions{}).Since(context.Background(), uuid.MustParse(project), 0)
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	for _, ev := range evs {
		var data struct {
			GalleryID, AssetID string
			Favorite           bool
		}
		json.Unmarshal(ev.Data, &data)
		if ev.Name == events.GalleryUpdated && data.Favorite {
			told = append(told, data.GalleryID+" "+data.AssetID)
		}
	}
	if want := []string{first["id"].(string) + " " + assets[0], first["id"].(string) + " " + assets[2],
		first["id"].(string) + " " + assets[2], second["id"].(string) + " " + assets[4]}; !slices.Equal(told, want) {
		t.Errorf("gallery.updated events %v, want %v", told, want)
	}

	other := a.newProject(key)
	_, otherUps := a.uploadAll(key, other, corpus(t, "photos/wood.jpg"))
	elsewhere := a.newGallery(key, other, map[string]any{"title": "Elsewhere", "assetIds": []string{otherUps[0].AssetID}})
	bob := a.user("bob@example.org", false)
	bobs := a.newProject(bob)
	_, bobUps := a.uploadAll(bob, bobs, corpus(t, "photos/dune.jpg"))
	bobsGallery := a.newGallery(bob, bobs, map[string]any{"title": "Bob's", "assetIds": []string{bobUps[0].AssetID}})
	for what, v := range map[string]string{
		"a gallery of another project": elsewhere["id"].(string),
		"another person's gallery":     bobsGallery["id"].(string),
		"no gallery":                   "8f0c5e0e-4a8b-4f53-9a53-2d1c7b3f2a11",
		"the nil id":                   "00000000-0000-0000-0000-000000000000",
		"a word":                       "all",
	} {
		r := a.do("GET", "/v1/projects/"+project+"/assets?clientFavorite="+v, key, nil)
		expectField(t, what, r, "clientFavorite", "")
		if r.status == 400 && fields(t, r)["clientFavorite"] != "must be any or the id of a gallery of this project" {
			t.Errorf("%s: fields %v", what, fields(t, r))
		}
		expectField(t, what+" in a search", a.do("POST", "/v1/projects/"+project+"/search", key,
			map[string]any{"filters": map[string]any{"clientFavorite": v}}), "filters.clientFavorite", "")
	}
}
