package store

import (
	"context"

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
// so the dot product is the cosine. It scans the project's vectors in SQL;
// a project of tens of thousands of photos would want an index (pgvector).
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
