package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
)

// CullPhoto is a processed photo as assisted culling judges it: its
// quality signals, its faces and groups, and one person's rating of it.
type CullPhoto struct {
	ID      uuid.UUID
	Quality json.RawMessage
	// Faces is nil when its faces were not looked for.
	Faces *FaceCounts
	// Burst and Duplicate are the groups of each kind it is in, if any.
	Burst, Duplicate *uuid.UUID
	// Rating is the person's; nil when they have none.
	Rating *Rating
}

// FaceCounts sum up a photo's faces, as face_scans holds them.
type FaceCounts struct {
	Count, EyesClosed int
	// MinSharpness is the softest face's; nil without faces.
	MinSharpness *float64
	// Clipped is the middle face's clipped share; nil when not read.
	Clipped *float64
}

// cullRow is a CullPhoto as one row reads it.
type cullRow struct {
	ID           uuid.UUID       `db:"id"`
	Quality      json.RawMessage `db:"quality"`
	FaceCount    *int            `db:"face_count"`
	EyesClosed   *int            `db:"eyes_closed"`
	MinSharpness *float64        `db:"min_sharpness"`
	FacesClipped *float64        `db:"faces_clipped"`
	Burst        *uuid.UUID      `db:"burst_id"`
	Duplicate    *uuid.UUID      `db:"duplicate_id"`
	Picked       *bool           `db:"picked"`
	Rejected     *bool           `db:"rejected"`
	Rating       *int            `db:"rating"`
	ColorLabel   *string         `db:"color_label"`
	Assisted     *bool           `db:"assisted"`
	UpdatedAt    *time.Time      `db:"updated_at"`
}

// cullRatingColumns are the rating r's columns a cullRow reads, null
// when there is none.
const cullRatingColumns = `r.picked, r.rejected, r.rating, r.color_label, r.assisted, r.updated_at`

func (row cullRow) photo(user uuid.UUID) CullPhoto {
	p := CullPhoto{ID: row.ID, Quality: row.Quality, Burst: row.Burst, Duplicate: row.Duplicate}
	if row.FaceCount != nil {
		p.Faces = &FaceCounts{Count: *row.FaceCount, EyesClosed: *row.EyesClosed, MinSharpness: row.MinSharpness,
			Clipped: row.FacesClipped}
	}
	if row.UpdatedAt != nil { // updated_at is never null in a rating
		p.Rating = &Rating{AssetID: row.ID, UserID: user, Rating: row.Rating, Picked: *row.Picked, Rejected: *row.Rejected,
			ColorLabel: row.ColorLabel, Assisted: *row.Assisted, UpdatedAt: *row.UpdatedAt}
	}
	return p
}

// CullPhotos returns every processed photo of project (cull-ready or
// further) in id order, with user's rating of each, in one query.
func (s *Store) CullPhotos(ctx context.Context, project, user uuid.UUID) ([]CullPhoto, error) {
	var rows []cullRow
	err := s.db.SelectContext(ctx, &rows, `
		WITH groups AS (
			SELECT ca.asset_id,
			       (array_agg(c.id) FILTER (WHERE c.kind = 'burst'))[1] AS burst_id,
			       (array_agg(c.id) FILTER (WHERE c.kind = 'duplicate_group'))[1] AS duplicate_id
			FROM clusters c JOIN cluster_assets ca ON ca.cluster_id = c.id
			WHERE c.project_id = $1 AND c.kind IN ('burst', 'duplicate_group')
			GROUP BY ca.asset_id)
		SELECT a.id, a.quality, fs.face_count, fs.eyes_closed, fs.min_sharpness, fs.faces_clipped, g.burst_id, g.duplicate_id, `+cullRatingColumns+`
		FROM assets a`+faceJoin+`a.id
		LEFT JOIN groups g ON g.asset_id = a.id
		LEFT JOIN ratings r ON r.asset_id = a.id AND r.user_id = $2
		WHERE a.project_id = $1 AND a.status IN ('cull', 'search', 'ai')
		ORDER BY a.id`, project, user)
	return cullPhotos(rows, user), err
}

// HandDecisions returns up to limit of the processed photos user decided
// by hand (Rating.HandDecision) since their preferences' learnSince, in
// any project of theirs, the latest decided first; their groups are not
// read.
func (s *Store) HandDecisions(ctx context.Context, user uuid.UUID, limit int) ([]CullPhoto, error) {
	var rows []cullRow
	err := s.db.SelectContext(ctx, &rows, `
		SELECT a.id, a.quality, fs.face_count, fs.eyes_closed, fs.min_sharpness, fs.faces_clipped, NULL::uuid AS burst_id,
		       NULL::uuid AS duplicate_id, `+cullRatingColumns+`
		FROM ratings r JOIN assets a ON a.id = r.asset_id JOIN projects p ON p.id = a.project_id`+faceJoin+`a.id
		WHERE r.user_id = $1 AND `+handDecisionSQL+`
		  AND r.updated_at > coalesce((SELECT learn_since FROM cull_preferences WHERE user_id = $1), '-infinity')
		  AND a.status IN ('cull', 'search', 'ai') AND p.owner_user_id = $1 AND p.status <> 'deleted'
		ORDER BY r.updated_at DESC LIMIT $2`, user, limit)
	return cullPhotos(rows, user), err
}

func cullPhotos(rows []cullRow, user uuid.UUID) []CullPhoto {
	out := make([]CullPhoto, len(rows))
	for i, row := range rows {
		out[i] = row.photo(user)
	}
	return out
}

// CullPreferences are a person's own settings of assisted culling.
type CullPreferences struct {
	// Strictness is each criterion's they set: a number 0–1, or nil for
	// off; a criterion missing takes the default.
	Strictness map[string]*float64
	// LearnSince is when their decisions began to count; nil for always.
	LearnSince *time.Time
}

type cullPreferencesRow struct {
	Strictness []byte     `db:"strictness"`
	LearnSince *time.Time `db:"learn_since"`
}

// cullPreferencesColumns read a row of cull_preferences, the time
// '-infinity' (always) as null.
const cullPreferencesColumns = `strictness, nullif(learn_since, '-infinity') AS learn_since`

func (row cullPreferencesRow) preferences() (CullPreferences, error) {
	p := CullPreferences{Strictness: map[string]*float64{}, LearnSince: row.LearnSince}
	return p, json.Unmarshal(row.Strictness, &p.Strictness)
}

// CullPreferences returns user's preferences; the defaults (nothing set,
// learning from every decision) when they have none.
func (s *Store) CullPreferences(ctx context.Context, user uuid.UUID) (CullPreferences, error) {
	var row cullPreferencesRow
	err := s.db.GetContext(ctx, &row, `SELECT `+cullPreferencesColumns+` FROM cull_preferences WHERE user_id = $1`, user)
	if errors.Is(err, sql.ErrNoRows) {
		return CullPreferences{Strictness: map[string]*float64{}}, nil
	}
	if err != nil {
		return CullPreferences{}, err
	}
	return row.preferences()
}

// SetCullStrictness replaces user's strictness with strictness and
// returns their preferences.
func (s *Store) SetCullStrictness(ctx context.Context, user uuid.UUID, strictness map[string]*float64) (CullPreferences, error) {
	b, err := json.Marshal(strictness)
	if err != nil {
		return CullPreferences{}, err
	}
	var row cullPreferencesRow
	err = s.db.GetContext(ctx, &row, `
		INSERT INTO cull_preferences AS c (user_id, strictness) VALUES ($1, $2)
		ON CONFLICT (user_id) DO UPDATE SET strictness = $2, updated_at = now()
		RETURNING `+cullPreferencesColumns, user, b)
	if err != nil {
		return CullPreferences{}, err
	}
	return row.preferences()
}

// ResetCullPreferences sets user's strictness back to the defaults and
// forgets what their decisions until now taught.
func (s *Store) ResetCullPreferences(ctx context.Context, user uuid.UUID) (CullPreferences, error) {
	var row cullPreferencesRow
	err := s.db.GetContext(ctx, &row, `
		INSERT INTO cull_preferences AS c (user_id, learn_since) VALUES ($1, now())
		ON CONFLICT (user_id) DO UPDATE SET strictness = '{}', learn_since = now(), updated_at = now()
		RETURNING `+cullPreferencesColumns, user)
	if err != nil {
		return CullPreferences{}, err
	}
	return row.preferences()
}
