package app

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
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
	// Assisted: the flag, stars and label are the culling assistant's.
	Assisted  bool      `json:"assisted"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// RatingJSONOf is r in its JSON shape.
func RatingJSONOf(r store.Rating) *RatingJSON {
	return &RatingJSON{AssetID: r.AssetID, UserID: r.UserID, Rating: r.Rating, Picked: r.Picked, Rejected: r.Rejected,
		Starred: r.Starred, Notes: r.Notes, ColorLabel: r.ColorLabel, Assisted: r.Assisted, UpdatedAt: r.UpdatedAt.UTC()}
}

// Rate applies change to user's rating of an asset of project (one rating
// per person and asset, store.Rate) and tells the project's other open
// views of it, so a cull on one screen shows on the others. The caller has
// checked that user may see the asset.
// A decision on half of a RAW+JPEG pair is made on both, and the views
// are told of both.
func (a *App) Rate(ctx context.Context, log *slog.Logger, user, project uuid.UUID, change store.RatingChange) (*store.Rating, error) {
	byAsset, err := a.store.RatePair(ctx, user, change)
	if err != nil {
		return nil, err
	}
	r := byAsset[change.AssetID]
	a.ratingChanged(ctx, log, project, r)
	for id, other := range byAsset {
		if id != change.AssetID {
			a.ratingChanged(ctx, log, project, other)
		}
	}
	return &r, nil
}

// CullResult is what a cull changed: the ratings, in the order their
// assets first come in the changes, and the assets whose changes were
// all assisted and left alone for a decision made by hand.
type CullResult struct {
	Ratings   []store.Rating
	LeftAlone []uuid.UUID
}

// CullActions applies user's rating changes to assets of project in one
// transaction, all or none (store.CullActions: a store.ForeignAssetsError
// names the assets outside the project), and tells the open views of each
// rating changed once, however many changes it took. An assisted change
// to a rating holding a hand decision is skipped (store.Rate).
func (a *App) CullActions(ctx context.Context, log *slog.Logger, user, project uuid.UUID, changes []store.RatingChange) (*CullResult, error) {
	byAsset, err := a.store.CullActions(ctx, user, project, changes)
	if err != nil {
		return nil, err
	}
	out := &CullResult{Ratings: make([]store.Rating, 0, len(byAsset)), LeftAlone: []uuid.UUID{}}
	seen := map[uuid.UUID]bool{}
	for _, ch := range changes {
		if seen[ch.AssetID] {
			continue
		}
		seen[ch.AssetID] = true
		if r, ok := byAsset[ch.AssetID]; ok {
			out.Ratings = append(out.Ratings, r)
		} else {
			out.LeftAlone = append(out.LeftAlone, ch.AssetID)
		}
	}
	// A thousand ratings are a few calls to Redis, not a thousand. The
	// other halves of pairs a decision reached are told too.
	if a.Events != nil {
		evs := make([]events.Event, 0, len(byAsset))
		told := make(map[uuid.UUID]bool, len(byAsset))
		for _, r := range append(slices.Clone(out.Ratings), pairRatings(byAsset, seen)...) {
			if told[r.AssetID] {
				continue
			}
			told[r.AssetID] = true
			ev, err := events.New(events.AssetUpdated, project, uuid.Nil, ratingEventData(r))
			if err != nil {
				return nil, err
			}
			evs = append(evs, ev)
		}
		if err := a.Events.PublishAll(ctx, evs); err != nil {
			log.Warn("publish event", "event", events.AssetUpdated, "project", project, "err", err)
		}
	}
	return out, nil
}

// pairRatings are the ratings of byAsset whose assets the changes did not
// name (seen): the other halves of RAW+JPEG pairs, in asset order, so
// views are told in the same order each time.
func pairRatings(byAsset map[uuid.UUID]store.Rating, seen map[uuid.UUID]bool) []store.Rating {
	var out []store.Rating
	for id, r := range byAsset {
		if !seen[id] {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b store.Rating) int { return bytes.Compare(a.AssetID[:], b.AssetID[:]) })
	return out
}

// ratingChanged tells the project's open views of a new rating.
func (a *App) ratingChanged(ctx context.Context, log *slog.Logger, project uuid.UUID, r store.Rating) {
	a.publish(ctx, log, events.AssetUpdated, project, uuid.Nil, ratingEventData(r))
}

// ratingEventData is what asset.updated says of a new rating.
func ratingEventData(r store.Rating) map[string]any {
	return map[string]any{"assetId": r.AssetID, "myRating": RatingJSONOf(r)}
}
