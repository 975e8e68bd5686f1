package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// A cull that changes one photo twice tells the open views of it once,
// with the rating both changes left, and answers in the order the photos
// were first named.
func TestACullTellsEachRatingOnce(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	a := newApp(t, env, 0)
	owner, project := env.Project(t)
	var photos []uuid.UUID
	for _, f := range env.Finalize(t, owner, project, testenv.Files(2)...).Assets {
		photos = append(photos, f.AssetID)
	}
	second, first := photos[1], photos[0]
	yes := true
	res, err := a.CullActions(ctx, slog.Default(), owner, project, []store.RatingChange{
		{AssetID: second, Picked: &yes},
		{AssetID: first, Rejected: &yes},
		{AssetID: second, Starred: &yes},
	})
	if err != nil {
		t.Fatal(err)
	}
	ratings := res.Ratings
	if len(ratings) != 2 || ratings[0].AssetID != second || ratings[1].AssetID != first {
		t.Fatalf("ratings %+v, want the second photo's then the first's", ratings)
	}
	evs, _, err := events.NewPublisher(env.Redis, events.PublisherOptions{}).Since(ctx, project, 0)
	if err != nil {
		t.Fatal(err)
	}
	told := map[uuid.UUID][]json.RawMessage{}
	for _, ev := range evs {
		var data struct {
			AssetID  uuid.UUID       `json:"assetId"`
			MyRating json.RawMessage `json:"myRating"`
		}
		if ev.Name == events.AssetUpdated && json.Unmarshal(ev.Data, &data) == nil && data.MyRating != nil {
			told[data.AssetID] = append(told[data.AssetID], data.MyRating)
		}
	}
	var got struct{ Picked, Starred bool }
	if len(told) != 2 || len(told[first]) != 1 || len(told[second]) != 1 || json.Unmarshal(told[second][0], &got) != nil || !got.Picked || !got.Starred {
		t.Fatalf("rating events %s, want one a photo, the second picked and starred", told)
	}
}
