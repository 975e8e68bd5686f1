package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/store"
)

// RatingJSON is a rating as the API answers it and as the asset.updated
// events of a rating change carry it (as myRating): one shape for both, so
// a view updates from an event as from a fetch.
type RatingJSON struct {
	AssetID    uuid.UUID `json:"assetId"`
	UserID     uuid.UUID `json:"userId"`
	Rating     *int      `json:"rating"`
	Picked     bool      `json:"picked"`
	Rejected   bool      `json:"rejected"`
	Starred    bool      `json:"starred"`
	Notes      string    `json:"notes"`
	ColorLabel *string   `json:"colorLabel"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// RatingJSONOf is r in its JSON shape.
func RatingJSONOf(r store.Rating) *RatingJSON {
	return &RatingJSON{AssetID: r.AssetID, UserID: r.UserID, Rating: r.Rating, Picked: r.Picked, Rejected: r.Rejected,
		Starred: r.Starred, Notes: r.Notes, ColorLabel: r.ColorLabel, UpdatedAt: r.UpdatedAt.UTC()}
}

// Rate applies change to user's rating of an asset of project (one rating
// per person and asset, store.Rate) and tells the project's other open
// views of it, so a cull on one screen shows on the others. The caller has
// checked that user may see the asset.
func (a *App) Rate(ctx context.Context, log *slog.Logger, user, project uuid.UUID, change store.RatingChange) (*store.Rating, error) {
	r, err := a.store.Rate(ctx, user, change)
	if err != nil {
		return nil, err
	}
	a.ratingChanged(ctx, log, project, *r)
	return r, nil
}

// CullActions applies user's rating changes to assets of project in one
// transaction, all or none (store.CullActions: a store.ForeignAssetsError
// names the assets outside the project), and tells the open views of each
// rating changed once, however many changes it took. It returns those
// ratings in the order their assets first come in changes.
func (a *App) CullActions(ctx context.Context, log *slog.Logger, user, project uuid.UUID, changes []store.RatingChange) ([]store.Rating, error) {
	byAsset, err := a.store.CullActions(ctx, user, project, changes)
	if err != nil {
		return nil, err
	}
	ratings := make([]store.Rating, 0, len(byAsset))
	seen := map[uuid.UUID]bool{}
	for _, ch := range changes {
		if !seen[ch.AssetID] {
			seen[ch.AssetID] = true
			ratings = append(ratings, byAsset[ch.AssetID])
			a.ratingChanged(ctx, log, project, byAsset[ch.AssetID])
		}
	}
	return ratings, nil
}

// ratingChanged tells the project's open views of a new rating.
func (a *App) ratingChanged(ctx context.Context, log *slog.Logger, project uuid.UUID, r store.Rating) {
	a.publish(ctx, log, events.AssetUpdated, project, uuid.Nil, map[string]any{"assetId": r.AssetID, "myRating": RatingJSONOf(r)})
}
