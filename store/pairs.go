package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/lib/pq"

	"lightbox/imaging/formats"
)

// rawTypes are the content types of camera raws, one half of a RAW+JPEG
// pair.
var rawTypes = pq.Array(formats.RawContentTypes())

// baseNameSQL is a file name without its extension, lower-cased, as
// migration 0060's index holds it.
const baseNameSQL = `lower(regexp_replace(%s.filename, '\.[^.]*$', ''))`

// linkPair pairs an asset just ingested with the other half of its shot:
// the one photo of its project with the same base name and capture time
// (to the second) that is a camera raw where it is a JPEG, or a JPEG where
// it is a raw, ingested and not yet paired. Ratings one half already has
// are given to the other where it has none, so both start with one
// decision. Two halves ingested at once take turns on a lock of their
// base name, so the second sees the first. Running it again changes
// nothing.
func (s *Store) linkPair(ctx context.Context, id uuid.UUID) error {
	if _, err := s.db.ExecContext(ctx, `
		SELECT pg_advisory_xact_lock(hashtextextended(a.project_id::text || '/' || `+fmt.Sprintf(baseNameSQL, "a")+`, 0))
		FROM assets a WHERE a.id = $1`, id); err != nil {
		return err
	}
	var partner uuid.UUID
	err := s.db.GetContext(ctx, &partner, `
		WITH me AS (
			SELECT id, project_id, captured_at, `+fmt.Sprintf(baseNameSQL, "a")+` AS base, content_type = ANY($2) AS raw
			FROM assets a
			WHERE id = $1 AND pair_asset_id IS NULL AND captured_at IS NOT NULL
			  AND (content_type = 'image/jpeg' OR content_type = ANY($2))
		), candidates AS (
			SELECT b.id FROM assets b JOIN me ON b.project_id = me.project_id AND b.id <> me.id
			WHERE `+fmt.Sprintf(baseNameSQL, "b")+` = me.base AND b.pair_asset_id IS NULL
			  AND b.status IN ('cull', 'search', 'ai')
			  AND date_trunc('second', b.captured_at) = date_trunc('second', me.captured_at)
			  AND CASE WHEN me.raw THEN b.content_type = 'image/jpeg' ELSE b.content_type = ANY($2) END
		), linked AS (
			UPDATE assets SET pair_asset_id = CASE WHEN assets.id = $1 THEN c.id ELSE $1::uuid END, updated_at = now()
			FROM candidates c
			WHERE (SELECT count(*) FROM candidates) = 1 AND assets.id IN ($1, c.id)
			RETURNING c.id
		)
		SELECT id FROM linked LIMIT 1`, id, rawTypes)
	if err = notFound(err); err == ErrNotFound {
		return nil
	} else if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `
		INSERT INTO ratings (asset_id, user_id, rating, picked, rejected, color_label, assisted)
		SELECT CASE WHEN r.asset_id = $1 THEN $2::uuid ELSE $1::uuid END, r.user_id, r.rating, r.picked, r.rejected,
		       r.color_label, r.assisted
		FROM ratings r WHERE r.asset_id IN ($1, $2) AND (r.picked OR r.rejected OR r.rating IS NOT NULL OR r.color_label IS NOT NULL)
		ON CONFLICT (asset_id, user_id) DO UPDATE SET rating = EXCLUDED.rating, picked = EXCLUDED.picked,
			rejected = EXCLUDED.rejected, color_label = EXCLUDED.color_label, assisted = EXCLUDED.assisted, updated_at = now()
		WHERE NOT (ratings.picked OR ratings.rejected OR ratings.rating IS NOT NULL OR ratings.color_label IS NOT NULL)`,
		id, partner)
	return err
}

// withPairs adds to changes, for each one that decides (a flag, stars or a
// label) on half of a RAW+JPEG pair, the same decision on the other half,
// unless changes already change that one themselves: a pair is one photo
// to cull.
func (s *Store) withPairs(ctx context.Context, changes []RatingChange) ([]RatingChange, error) {
	ids := make(UUIDs, 0, len(changes))
	asked := make(map[uuid.UUID]bool, len(changes))
	for _, c := range changes {
		asked[c.AssetID] = true
		if c.decides() {
			ids = append(ids, c.AssetID)
		}
	}
	if len(ids) == 0 {
		return changes, nil
	}
	var pairs []struct {
		ID   uuid.UUID `db:"id"`
		Pair uuid.UUID `db:"pair_asset_id"`
	}
	if err := s.db.SelectContext(ctx, &pairs, `SELECT id, pair_asset_id FROM assets
		WHERE id = ANY($1) AND pair_asset_id IS NOT NULL`, ids); err != nil {
		return nil, err
	}
	if len(pairs) == 0 {
		return changes, nil
	}
	pairOf := make(map[uuid.UUID]uuid.UUID, len(pairs))
	for _, p := range pairs {
		if !asked[p.Pair] {
			pairOf[p.ID] = p.Pair
		}
	}
	out := changes
	for _, c := range changes {
		other, ok := pairOf[c.AssetID]
		if !ok || !c.decides() {
			continue
		}
		out = append(out, RatingChange{AssetID: other, Rating: c.Rating, ClearRating: c.ClearRating, Picked: c.Picked,
			Rejected: c.Rejected, ColorLabel: c.ColorLabel, ClearColorLabel: c.ClearColorLabel, Assisted: c.Assisted})
	}
	return out, nil
}
