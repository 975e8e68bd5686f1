package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/store"
)

// maxCullActions is how many rating changes one cull:applyAction takes.
const maxCullActions = 1000

// maxNotes bounds notes on a rating or an asset, in characters.
const maxNotes = 5000

// ratingInput is one rating change as clients send it.
type ratingInput struct {
	Rating   optional[int] `json:"rating"`
	Picked   *bool         `json:"picked"`
	Rejected *bool         `json:"rejected"`
	Starred  *bool         `json:"starred"`
	Notes    *string       `json:"notes"`
	// ColorLabel is one of store.ColorLabels; null clears it.
	ColorLabel optional[string] `json:"colorLabel"`
}

// change checks in, naming fields under prefix ("actions[3].").
func (in ratingInput) change(errs app.FieldErrors, prefix string, asset uuid.UUID) store.RatingChange {
	ch := store.RatingChange{AssetID: asset, Picked: in.Picked, Rejected: in.Rejected, Starred: in.Starred, Notes: in.Notes}
	if in.Rating.Set {
		if in.Rating.Value == nil {
			ch.ClearRating = true
		} else if r := *in.Rating.Value; r < 1 || r > 5 {
			errs.Add(prefix+"rating", "must be a whole number from 1 to 5, or null")
		} else {
			ch.Rating = in.Rating.Value
		}
	}
	if in.Picked != nil && in.Rejected != nil && *in.Picked && *in.Rejected {
		errs.Add(prefix+"picked", "cannot be true with rejected")
	}
	if in.Notes != nil && utf8.RuneCountInString(*in.Notes) > maxNotes {
		errs.Add(prefix+"notes", "must be at most 5000 characters")
	}
	if in.ColorLabel.Set {
		if l := in.ColorLabel.Value; l == nil {
			ch.ClearColorLabel = true
		} else if !slices.Contains(store.ColorLabels, *l) {
			errs.Add(prefix+"colorLabel", "must be red, yellow, green, blue, purple or null")
		} else {
			ch.ColorLabel = l
		}
	}
	if !in.Rating.Set && in.Picked == nil && in.Rejected == nil && in.Starred == nil && in.Notes == nil && !in.ColorLabel.Set {
		field := strings.TrimSuffix(prefix, ".")
		if field == "" {
			field = "(body)"
		}
		errs.Add(field, "must set rating, picked, rejected, starred, notes or colorLabel")
	}
	return ch
}

// rateAsset sets the caller's rating of an asset: one per person and asset.
func (s *Server) rateAsset(c *gin.Context) {
	a, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	var in ratingInput
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	change := in.change(errs, "", a.ID)
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	r, err := s.app.Rate(c.Request.Context(), logger(c), principal(c).ID, a.ProjectID, change)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, app.RatingJSONOf(*r))
}

// applyCullActions applies up to 1,000 rating changes of the caller's in
// one transaction: all of them, or none. An assisted change (one a
// cull:suggest handed out) leaves a photo decided by hand as it is, and
// the answer lists those photos.
func (s *Server) applyCullActions(c *gin.Context) {
	p, err := s.ownProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		Actions []struct {
			AssetID  uuid.UUID `json:"assetId"`
			Assisted bool      `json:"assisted"`
			ratingInput
		} `json:"actions"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	switch n := len(in.Actions); {
	case n == 0:
		errs.Add("actions", "must hold 1 to 1000 actions")
	case n > maxCullActions:
		fail(c, apiError(http.StatusBadRequest, "too_many_actions", "%d actions; one request takes at most %d.", n, maxCullActions).
			with("limit", maxCullActions))
		return
	}
	changes := make([]store.RatingChange, len(in.Actions))
	for i, act := range in.Actions {
		prefix := fmt.Sprintf("actions[%d].", i)
		if act.AssetID == uuid.Nil {
			errs.Add(prefix+"assetId", "is required")
		}
		changes[i] = act.change(errs, prefix, act.AssetID)
		changes[i].Assisted = act.Assisted
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	res, err := s.app.CullActions(c.Request.Context(), logger(c), principal(c).ID, p.ID, changes)
	if err != nil {
		fail(c, foreignAssets(err, "actions"))
		return
	}
	ids := make([]uuid.UUID, len(res.Ratings))
	for i, r := range res.Ratings {
		ids[i] = r.AssetID
	}
	c.JSON(http.StatusOK, gin.H{"ok": true, "updatedAssetIds": ids, "leftAloneAssetIds": res.LeftAlone})
}
