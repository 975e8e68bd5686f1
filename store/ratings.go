package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
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
	ColorLabel *string `db:"color_label"`
	// Assisted is true while the flag, stars and label are the ones the
	// culling assistant wrote; a hand decision sets it back to false.
	Assisted  bool      `db:"assisted"`
	UpdatedAt time.Time `db:"updated_at"`
}

// Decided reports whether r holds a decision: a flag, stars or a label.
func (r Rating) Decided() bool {
	return r.Picked || r.Rejected || r.Rating != nil || r.ColorLabel != nil
}

// HandDecision reports whether r holds a decision made by hand, which the
// culling assistant never overrides.
func (r Rating) HandDecision() bool { return r.Decided() && !r.Assisted }

// handDecisionSQL is HandDecision on the rating row r, as the index of
// migration 0058 holds it.
const handDecisionSQL = `(NOT r.assisted AND (r.picked OR r.rejected OR r.rating IS NOT NULL OR r.color_label IS NOT NULL))`

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

const ratingColumns = `asset_id, user_id, rating, picked, rejected, starred, notes, color_label, assisted, updated_at`

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
	// Assisted marks a change the culling assistant suggested: it leaves
	// a hand decision as it is (ErrHandDecision) and marks what it writes
	// as the assistant's. A change without it that decides (a flag, stars
	// or a label) is the person's own.
	Assisted bool
}

// decides reports whether c sets or clears a flag, stars or a label.
func (c RatingChange) decides() bool {
	return c.Rating != nil || c.ClearRating || c.Picked != nil || c.Rejected != nil || c.ColorLabel != nil || c.ClearColorLabel
}

// ErrHandDecision refuses an assisted change to a rating that holds a
// decision made by hand.
var ErrHandDecision = errors.New("store: the rating holds a decision made by hand")

// Rate applies change to user's rating of change.AssetID, creating the
// rating when there is none, and returns it. An assisted change to a
// rating holding a hand decision changes nothing and is ErrHandDecision,
// decided on the row as it is locked, so a hand decision made meanwhile
// still wins. The caller has checked that user may see the asset.
//
// A decision on half of a RAW+JPEG pair is made on both, in the same
// transaction.
func (s *Store) Rate(ctx context.Context, user uuid.UUID, change RatingChange) (*Rating, error) {
	byAsset, err := s.RatePair(ctx, user, change)
	if err != nil {
		return nil, err
	}
	r := byAsset[change.AssetID]
	return &r, nil
}

// RatePair is Rate, answering by asset the ratings it changed: the asked
// asset's and, when the change decides on half of a RAW+JPEG pair, the
// other half's.
func (s *Store) RatePair(ctx context.Context, user uuid.UUID, change RatingChange) (map[uuid.UUID]Rating, error) {
	var byAsset map[uuid.UUID]Rating
	err := s.WithTx(ctx, func(tx *Store) (err error) {
		byAsset, err = tx.rateAll(ctx, user, []RatingChange{change})
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, ok := byAsset[change.AssetID]; !ok {
		return nil, ErrHandDecision
	}
	return byAsset, nil
}

// CullActions applies several rating changes of user's to assets of project
// in one transaction: all of them, or none when any asset is not in the
// project (ErrForeignAssets, listing them). It returns the ratings as the
// changes left them, by asset; an asset whose changes were all assisted
// and left alone for a hand decision (see Rate) is not among them. The
// other halves of RAW+JPEG pairs a decision reached are among them too.
func (s *Store) CullActions(ctx context.Context, user, project uuid.UUID, changes []RatingChange) (map[uuid.UUID]Rating, error) {
	ids := make([]uuid.UUID, len(changes))
	for i, c := range changes {
		ids[i] = c.AssetID
	}
	var out map[uuid.UUID]Rating
	err := s.WithTx(ctx, func(tx *Store) error {
		foreign, err := tx.ForeignAssets(ctx, project, ids)
		if err != nil {
			return err
		}
		if len(foreign) > 0 {
			return &ForeignAssetsError{IDs: foreign}
		}
		out, err = tx.rateAll(ctx, user, changes)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// rateAll applies changes, several to one asset if need be, and the same
// decisions to the other halves of pairs (withPairs), inside the caller's
// transaction; it returns the ratings changed, by asset.
func (s *Store) rateAll(ctx context.Context, user uuid.UUID, changes []RatingChange) (map[uuid.UUID]Rating, error) {
	changes, err := s.withPairs(ctx, changes)
	if err != nil {
		return nil, err
	}
	// An asset's changes apply in their order: its first with every
	// asset's first, then its second with every second, and so on.
	var rounds [][]RatingChange
	nth := make(map[uuid.UUID]int, len(changes))
	for _, c := range changes {
		k := nth[c.AssetID]
		nth[c.AssetID]++
		if k == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[k] = append(rounds[k], c)
	}
	out := make(map[uuid.UUID]Rating, len(changes))
	for _, round := range rounds {
		rs, err := s.rateEach(ctx, user, round)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			out[r.AssetID] = r
		}
	}
	return out, nil
}

// rateEach applies changes, each to another asset, as Rate does one, in
// three statements however many there are, and returns the ratings they
// left; an assisted change left alone for a hand decision has none.
// Ratings are written and locked in asset order, so two requests over the
// same assets cannot deadlock.
func (s *Store) rateEach(ctx context.Context, user uuid.UUID, changes []RatingChange) ([]Rating, error) {
	changes = slices.Clone(changes)
	slices.SortFunc(changes, func(a, b RatingChange) int { return bytes.Compare(a.AssetID[:], b.AssetID[:]) })
	n := len(changes)
	var c struct {
		assets                                     UUIDs
		ratings                                    []*int
		picked, rejected, starred                  []*bool
		notes, labels                              []*string
		clearRating, clearLabel, assisted, decides []bool
	}
	for _, ch := range changes {
		picked, rejected := ch.Picked, ch.Rejected
		if picked == nil && rejected != nil && *rejected {
			picked = new(bool)
		}
		if rejected == nil && picked != nil && *picked {
			rejected = new(bool)
		}
		c.assets = append(c.assets, ch.AssetID)
		c.ratings, c.clearRating = append(c.ratings, ch.Rating), append(c.clearRating, ch.ClearRating)
		c.picked, c.rejected, c.starred = append(c.picked, picked), append(c.rejected, rejected), append(c.starred, ch.Starred)
		c.notes, c.labels, c.clearLabel = append(c.notes, ch.Notes), append(c.labels, ch.ColorLabel), append(c.clearLabel, ch.ClearColorLabel)
		c.assisted, c.decides = append(c.assisted, ch.Assisted), append(c.decides, ch.decides())
	}
	args := []any{user, c.assets, pq.Array(c.ratings), pq.Array(c.clearRating), pq.Array(c.picked), pq.Array(c.rejected),
		pq.Array(c.starred), pq.Array(c.notes), pq.Array(c.labels), pq.Array(c.clearLabel), pq.Array(c.assisted), pq.Array(c.decides)}
	const source = ` unnest($2::uuid[], $3::int[], $4::boolean[], $5::boolean[], $6::boolean[], $7::boolean[], $8::text[],
		$9::text[], $10::boolean[], $11::boolean[], $12::boolean[]) WITH ORDINALITY AS c(asset_id, rating, clear_rating,
		picked, rejected, starred, notes, color_label, clear_color_label, assisted, decides, n) `
	var out []Rating
	if err := s.db.SelectContext(ctx, &out, `
		INSERT INTO ratings AS r (asset_id, user_id, rating, picked, rejected, starred, notes, color_label, assisted)
		SELECT c.asset_id, $1, c.rating, coalesce(c.picked, false), coalesce(c.rejected, false), coalesce(c.starred, false),
		       coalesce(c.notes, ''), c.color_label, c.assisted AND c.decides
		FROM`+source+`ORDER BY c.n
		ON CONFLICT (asset_id, user_id) DO NOTHING
		RETURNING `+ratingColumns, args...); err != nil || len(out) == n {
		return out, err
	}
	inserted := make(UUIDs, len(out))
	for i, r := range out {
		inserted[i] = r.AssetID
	}
	if n > 1 {
		if _, err := s.db.ExecContext(ctx, `SELECT FROM ratings WHERE user_id = $1 AND asset_id = ANY($2)
			ORDER BY asset_id FOR UPDATE`, user, c.assets); err != nil {
			return nil, err
		}
	}
	// Each row is judged as it is now that it is locked: a hand decision
	// committed meanwhile wins over an assisted change.
	var updated []Rating
	err := s.db.SelectContext(ctx, &updated, `
		UPDATE ratings r SET
			rating = CASE WHEN c.clear_rating THEN NULL ELSE coalesce(c.rating, r.rating) END,
			picked = coalesce(c.picked, r.picked),
			rejected = coalesce(c.rejected, r.rejected),
			starred = coalesce(c.starred, r.starred),
			notes = coalesce(c.notes, r.notes),
			color_label = CASE WHEN c.clear_color_label THEN NULL ELSE coalesce(c.color_label, r.color_label) END,
			assisted = CASE WHEN c.decides THEN c.assisted ELSE r.assisted END,
			updated_at = now()
		FROM`+source+`
		WHERE r.user_id = $1 AND r.asset_id = c.asset_id AND r.asset_id <> ALL($13)
		  AND (NOT c.assisted OR NOT `+handDecisionSQL+`)
		RETURNING r.`+strings.ReplaceAll(ratingColumns, ", ", ", r."), append(args, inserted)...)
	return append(out, updated...), err
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
