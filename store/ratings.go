package store

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Rating is one person's verdict on an asset.
type Rating struct {
	AssetID  uuid.UUID `db:"asset_id"`
	UserID   uuid.UUID `db:"user_id"`
	Rating   *int      `db:"rating"`
	Picked   bool      `db:"picked"`
	Rejected bool      `db:"rejected"`
	Starred  bool      `db:"starred"`
	Notes    string    `db:"notes"`
	// ColorLabel is one of ColorLabels, or nil.
	ColorLabel *string   `db:"color_label"`
	UpdatedAt  time.Time `db:"updated_at"`
}

// ColorLabels are the colour labels a rating may carry, in Lightroom's
// order (its keys 6 to 9 set the first four).
var ColorLabels = []string{"red", "yellow", "green", "blue", "purple"}

// Bounds of the keywords and IPTC captions an asset holds, whether its
// owner sets them (PATCH /v1/assets/{id}) or its XMP packet brings them.
const (
	MaxKeywords, MaxKeywordLen = 100, 100
	MaxIPTC                    = 16 << 10
)

// NoColorLabel stands, among a filter's colour labels, for the assets
// without one.
const NoColorLabel = "none"

const ratingColumns = `asset_id, user_id, rating, picked, rejected, starred, notes, color_label, updated_at`

// RatingChange is what a person changes of their rating; nil leaves a
// field as it is. Picking an asset un-rejects it and rejecting un-picks
// it, unless the same change says otherwise.
type RatingChange struct {
	AssetID         uuid.UUID
	Rating          *int
	ClearRating     bool // rating: null
	Picked          *bool
	Rejected        *bool
	Starred         *bool
	Notes           *string
	ColorLabel      *string
	ClearColorLabel bool // colorLabel: null
}

// Rate applies change to user's rating of change.AssetID, creating the
// rating when there is none, and returns it. The caller has checked that
// user may see the asset.
func (s *Store) Rate(ctx context.Context, user uuid.UUID, change RatingChange) (*Rating, error) {
	picked, rejected := change.Picked, change.Rejected
	if picked == nil && rejected != nil && *rejected {
		picked = new(bool)
	}
	if rejected == nil && picked != nil && *picked {
		rejected = new(bool)
	}
	r := &Rating{}
	err := s.db.GetContext(ctx, r, `
		INSERT INTO ratings AS r (asset_id, user_id, rating, picked, rejected, starred, notes, color_label)
		VALUES ($1, $2, $3, coalesce($4, false), coalesce($5, false), coalesce($6, false), coalesce($7, ''), $9)
		ON CONFLICT (asset_id, user_id) DO UPDATE SET
			rating = CASE WHEN $8 THEN NULL ELSE coalesce($3, r.rating) END,
			picked = coalesce($4, r.picked),
			rejected = coalesce($5, r.rejected),
			starred = coalesce($6, r.starred),
			notes = coalesce($7, r.notes),
			color_label = CASE WHEN $10 THEN NULL ELSE coalesce($9, r.color_label) END,
			updated_at = now()
		RETURNING `+ratingColumns,
		change.AssetID, user, change.Rating, picked, rejected, change.Starred, change.Notes, change.ClearRating,
		change.ColorLabel, change.ClearColorLabel)
	return r, err
}

// CullActions applies several rating changes of user's to assets of project
// in one transaction: all of them, or none when any asset is not in the
// project (ErrForeignAssets, listing them). It returns the ratings as the
// changes left them, by asset.
func (s *Store) CullActions(ctx context.Context, user, project uuid.UUID, changes []RatingChange) (map[uuid.UUID]Rating, error) {
	ids := make([]uuid.UUID, len(changes))
	for i, c := range changes {
		ids[i] = c.AssetID
	}
	out := make(map[uuid.UUID]Rating, len(changes))
	err := s.WithTx(ctx, func(tx *Store) error {
		foreign, err := tx.ForeignAssets(ctx, project, ids)
		if err != nil {
			return err
		}
		if len(foreign) > 0 {
			return &ForeignAssetsError{IDs: foreign}
		}
		// In asset order, so two requests over the same assets take their
		// rating rows' locks in the same order and cannot deadlock; stable,
		// so an asset's own changes keep theirs.
		ordered := slices.Clone(changes)
		slices.SortStableFunc(ordered, func(a, b RatingChange) int { return bytes.Compare(a.AssetID[:], b.AssetID[:]) })
		for _, c := range ordered {
			r, err := tx.Rate(ctx, user, c)
			if err != nil {
				return err
			}
			out[c.AssetID] = *r
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ForeignAssetsError names the assets of a request that are not in its
// project.
type ForeignAssetsError struct{ IDs []uuid.UUID }

func (e *ForeignAssetsError) Error() string { return "store: assets not in the project" }

// Ratings returns user's ratings of assets, by asset.
func (s *Store) Ratings(ctx context.Context, user uuid.UUID, assets []uuid.UUID) (map[uuid.UUID]Rating, error) {
	var rows []Rating
	err := s.db.SelectContext(ctx, &rows, `SELECT `+ratingColumns+`
		FROM ratings WHERE user_id = $1 AND asset_id = ANY($2)`, user, UUIDs(assets))
	out := make(map[uuid.UUID]Rating, len(rows))
	for _, r := range rows {
		out[r.AssetID] = r
	}
	return out, err
}

// AssetChange is what a person changes on an asset; nil leaves a field as
// it is. Flags merge into the asset's: a key set to null is removed.
type AssetChange struct {
	Keywords *[]string
	Notes    *string
	IPTC     json.RawMessage
	Flags    json.RawMessage
}

// UpdateAsset applies change to owner's asset id and returns it.
func (s *Store) UpdateAsset(ctx context.Context, owner, id uuid.UUID, change AssetChange) (*Asset, error) {
	var keywords any
	if change.Keywords != nil {
		keywords = Strings(*change.Keywords)
	}
	res, err := s.db.ExecContext(ctx, `
		UPDATE assets a SET
			keywords = coalesce($3, a.keywords),
			notes = coalesce($4, a.notes),
			iptc = coalesce($5::jsonb, a.iptc),
			user_flags = CASE WHEN $6::jsonb IS NULL THEN a.user_flags ELSE jsonb_strip_nulls(a.user_flags || $6::jsonb) END,
			updated_at = now()
		FROM projects p
		WHERE a.id = $1 AND p.id = a.project_id AND p.owner_user_id = $2`,
		id, owner, keywords, change.Notes, nullJSON(change.IPTC), nullJSON(change.Flags))
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, ErrNotFound
	}
	return s.Asset(ctx, owner, id)
}
