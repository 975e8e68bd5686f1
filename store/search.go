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

// searchDoc is what a search matches: file name (split on separators),
// camera, lens and capture date in words. The 'simple' configuration keeps
// names and models as they are written, without stemming.
const searchDoc = `
	setweight(to_tsvector('simple', regexp_replace(a.filename, '[._-]+', ' ', 'g')), 'A') ||
	setweight(to_tsvector('simple', concat_ws(' ', a.camera_make, a.camera_model, a.lens_model)), 'B') ||
	setweight(to_tsvector('simple', coalesce(to_char(a.captured_at AT TIME ZONE 'UTC', 'YYYY-MM-DD YYYY FMMonth FMDay'), '')), 'C')`

// Search finds a project's assets matching q (web search syntax: words,
// "quoted phrases", -exclusions, or). It scans the project's rows; the
// project_id index bounds that to one project.
func (s *Store) Search(ctx context.Context, project uuid.UUID, q string, limit int) ([]SearchHit, error) {
	var hits []SearchHit
	err := s.db.SelectContext(ctx, &hits, `
		WITH q AS (SELECT websearch_to_tsquery('simple', $2) AS query),
		docs AS (SELECT a.id, a.filename, a.camera_make, a.camera_model, a.lens_model, a.captured_at, `+searchDoc+` AS doc
		         FROM assets a WHERE a.project_id = $1 AND a.status IN ('cull', 'search', 'ai'))
		SELECT d.id AS asset_id, ts_rank(d.doc, q.query) AS score,
		       array_remove(ARRAY[
		           CASE WHEN to_tsvector('simple', regexp_replace(d.filename, '[._-]+', ' ', 'g')) @@ q.query THEN 'filename' END,
		           CASE WHEN to_tsvector('simple', concat_ws(' ', d.camera_make, d.camera_model)) @@ q.query THEN 'camera' END,
		           CASE WHEN to_tsvector('simple', coalesce(d.lens_model, '')) @@ q.query THEN 'lens' END,
		           CASE WHEN to_tsvector('simple', coalesce(to_char(d.captured_at AT TIME ZONE 'UTC', 'YYYY-MM-DD YYYY FMMonth FMDay'), '')) @@ q.query THEN 'capturedAt' END
		       ], NULL) AS highlights
		FROM docs d, q WHERE d.doc @@ q.query
		ORDER BY score DESC, d.id LIMIT $3`, project, q, limit)
	return hits, err
}

// Stats counts a project's assets by stage in one aggregate query.
func (s *Store) Stats(ctx context.Context, project uuid.UUID) (ProjectStats, error) {
	var st ProjectStats
	err := s.db.GetContext(ctx, &st, `SELECT `+statsColumns+` FROM assets a WHERE a.project_id = $1`, project)
	return st, err
}
