package store

import (
	"context"

	"github.com/google/uuid"
)

// SearchHit is one asset that matched a search.
type SearchHit struct {
	AssetID    uuid.UUID `db:"asset_id"`
	Score      float64   `db:"score"`
	Highlights Strings   `db:"highlights"`
}

// Search finds a project's assets matching q (web search syntax: words,
// "quoted phrases", -exclusions, or) in assets.search_doc, which a trigger
// keeps: file name (split on separators), camera, lens and capture date in
// words, in the 'simple' configuration, which keeps names and models as
// they are written. The GIN index finds the matches; only the page of
// best ones is split into highlights.
func (s *Store) Search(ctx context.Context, project uuid.UUID, q string, limit int) ([]SearchHit, error) {
	var hits []SearchHit
	err := s.db.SelectContext(ctx, &hits, `
		WITH q AS (SELECT websearch_to_tsquery('simple', $2) AS query),
		top AS (SELECT a.id, ts_rank(a.search_doc, q.query) AS score FROM assets a, q
		        WHERE a.project_id = $1 AND a.status IN ('cull', 'search', 'ai') AND a.search_doc @@ q.query
		        ORDER BY score DESC, a.id LIMIT $3)
		SELECT d.id AS asset_id, top.score,
		       array_remove(ARRAY[
		           CASE WHEN to_tsvector('simple', regexp_replace(d.filename, '[._-]+', ' ', 'g')) @@ q.query THEN 'filename' END,
		           CASE WHEN to_tsvector('simple', concat_ws(' ', d.camera_make, d.camera_model)) @@ q.query THEN 'camera' END,
		           CASE WHEN to_tsvector('simple', coalesce(d.lens_model, '')) @@ q.query THEN 'lens' END,
		           CASE WHEN to_tsvector('simple', coalesce(to_char(d.captured_at AT TIME ZONE 'UTC', 'YYYY-MM-DD YYYY FMMonth FMDay'), '')) @@ q.query THEN 'capturedAt' END
		       ], NULL) AS highlights
		FROM top JOIN assets d ON d.id = top.id, q
		ORDER BY top.score DESC, d.id`, project, q, limit)
	return hits, err
}

// Stats counts a project's assets by stage, from the counts the triggers
// keep.
func (s *Store) Stats(ctx context.Context, project uuid.UUID) (ProjectStats, error) {
	var st ProjectStats
	err := s.db.GetContext(ctx, &st, `SELECT `+statsColumns+` FROM project_asset_counts c WHERE c.project_id = $1`, project)
	return st, err
}
