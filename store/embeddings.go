package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// SaveEmbedding upserts an asset's vector for model and moves the asset
// from 'cull' to 'search'. It reports whether the asset is search-ready.
func (s *Store) SaveEmbedding(ctx context.Context, asset uuid.UUID, model string, vec []float32) (bool, error) {
	var ready bool
	err := s.WithTx(ctx, func(tx *Store) error {
		if _, err := tx.db.ExecContext(ctx, `
			INSERT INTO embeddings (asset_id, model, vector) VALUES ($1, $2, $3)
			ON CONFLICT (asset_id, model) DO UPDATE SET vector = EXCLUDED.vector, created_at = now()`,
			asset, model, pq.Array(vec)); err != nil {
			return err
		}
		return tx.db.GetContext(ctx, &ready, `
			UPDATE assets SET status = CASE WHEN status = 'cull' THEN 'search' ELSE status END, updated_at = now()
			WHERE id = $1 RETURNING status IN ('search', 'ai')`, asset)
	})
	return ready, notFound(err)
}

// Similar is an asset and how close it is to another.
type Similar struct {
	AssetID uuid.UUID `db:"asset_id"`
	Score   float64   `db:"score"`
}

// SimilarAssets ranks the other assets of asset's project by cosine
// similarity of their model vectors. Vectors are L2-normalised when stored,
// so the dot product is the cosine. It scans the project's vectors in SQL
// (about 1.5 s for 100,000); the server answers from package similar's
// in-memory copy, and this is the reference it must match.
func (s *Store) SimilarAssets(ctx context.Context, asset uuid.UUID, model string, limit int) ([]Similar, error) {
	var out []Similar
	err := s.db.SelectContext(ctx, &out, `
		WITH me AS (SELECT a.project_id, e.vector FROM embeddings e JOIN assets a ON a.id = e.asset_id
		            WHERE e.asset_id = $1 AND e.model = $2)
		SELECT e.asset_id, (SELECT sum(x * y) FROM unnest(e.vector, me.vector) AS v(x, y)) AS score
		FROM me JOIN assets a ON a.project_id = me.project_id AND a.id <> $1
		JOIN embeddings e ON e.asset_id = a.id AND e.model = $2
		ORDER BY score DESC, e.asset_id LIMIT $3`, asset, model, limit)
	return out, err
}

// StoredVector is one asset's vector.
type StoredVector struct {
	AssetID uuid.UUID       `db:"asset_id"`
	Vector  pq.Float32Array `db:"vector"`
}

// ProjectVectors returns project's vectors of model stored or replaced
// since since (every one for the zero time), and the time from which the
// next call must ask to miss nothing: a vector's created_at is its
// transaction's start, so that is the start of the oldest transaction
// still open (of this database user; others' are hidden from it and do
// not write here), or now when none is.
func (s *Store) ProjectVectors(ctx context.Context, project uuid.UUID, model string, since time.Time) ([]StoredVector, time.Time, error) {
	var next time.Time
	if err := s.db.GetContext(ctx, &next, `
		SELECT least(statement_timestamp(), (SELECT min(xact_start) FROM pg_stat_activity
		                                         WHERE datname = current_database() AND pid <> pg_backend_pid()))`); err != nil {
		return nil, next, err
	}
	var out []StoredVector
	err := s.db.SelectContext(ctx, &out, `
		SELECT e.asset_id, e.vector FROM embeddings e JOIN assets a ON a.id = e.asset_id
		WHERE a.project_id = $1 AND e.model = $2 AND e.created_at >= $3`, project, model, since)
	return out, next, err
}

// AssetsInProject returns those of ids that are still assets of project.
func (s *Store) AssetsInProject(ctx context.Context, project uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error) {
	strs := make([]string, len(ids))
	for i, id := range ids {
		strs[i] = id.String()
	}
	var out []uuid.UUID
	err := s.db.SelectContext(ctx, &out, `SELECT id FROM assets WHERE project_id = $1 AND id = ANY($2::uuid[])`, project, pq.Array(strs))
	return out, err
}
