package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"

	"lightbox/events"
)

// TestGalleryChangesAreTold: every change of a gallery, the owner's and
// its visitors', is published as gallery.updated on the project's stream
// with the gallery's id, so a page showing the gallery can follow it.
func TestGalleryChangesAreTold(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg", "photos/storm.jpg"))
	g := a.newGallery(key, project, map[string]any{"title": "Ceremony", "assetIds": []string{ups[0].AssetID}})
	id, slug := g["id"].(string), g["shareSlug"].(string)
	expect(t, a.do("PATCH", "/v1/galleries/"+id, key, map[string]any{"title": "Ceremony, proofs"}), 200, "")
	expect(t, a.do("POST", "/v1/galleries/"+id+"/assets", key, map[string]any{"assetIds": []string{ups[1].AssetID, ups[2].AssetID}}), 200, "")
	expect(t, a.do("DELETE", "/v1/galleries/"+id+"/assets", key, map[string]any{"assetIds": []string{ups[2].AssetID}}), 200, "")
	r := a.viewer("POST", slug, "/auth", "", map[string]any{"name": "Kim"})
	expect(t, r, 200, "")
	token := r.json(t)["token"].(string)
	expect(t, a.viewer("POST", slug, "/favorite", token, map[string]any{"assetId": ups[0].AssetID, "favorite": true}), 200, "")
	expect(t, a.viewer("POST", slug, "/comment", token, map[string]any{"assetId": ups[1].AssetID, "text": "This one, please."}), 201, "")
	expect(t, a.do("DELETE", "/v1/galleries/"+id, key, nil), 204, "")

	evs, _, err := events.NewPublisher(a.env.Redis, events.PublisherOptions{}).Since(context.Background(), uuid.MustParse(project), 0)
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	for _, ev := range evs {
		if ev.Name != events.GalleryUpdated {
			continue
		}
		var data struct {
			GalleryID, AssetID, CommentID string
			Favorite, Deleted             bool
		}
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			t.Fatal(err)
		}
		if data.GalleryID != id {
			t.Errorf("gallery.updated names gallery %q, want %s", data.GalleryID, id)
		}
		told = append(told, fmt.Sprintf("asset=%t favorite=%t comment=%t deleted=%t",
			data.AssetID != "", data.Favorite, data.CommentID != "", data.Deleted))
	}
	change := "asset=false favorite=false comment=false deleted=false"
	want := []string{
		change, change, change, change, // made, retitled, given photos, relieved of one
		"asset=true favorite=true comment=false deleted=false",
		"asset=true favorite=false comment=true deleted=false",
		"asset=false favorite=false comment=false deleted=true",
	}
	if !slices.Equal(told, want) {
		t.Errorf("gallery.updated events:\n%v\nwant\n%v", told, want)
	}
}
