package store

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
)

// Unjudged lists, in id order after after, up to limit photos of project
// whose quality has no judged signals: those ingested before they existed.
func (s *Store) Unjudged(ctx context.Context, project, after uuid.UUID, limit int) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	err := s.db.SelectContext(ctx, &ids, `SELECT id FROM assets
		WHERE project_id = $1 AND status IN ('cull', 'search', 'ai') AND id > $2 AND NOT quality ? 'detail'
		ORDER BY id LIMIT $3`, project, after, limit)
	return ids, err
}

// SaveSignals merges signals (quality keys and values) into an asset's
// quality, keeping its other keys: saving twice is saving once.
func (s *Store) SaveSignals(ctx context.Context, asset uuid.UUID, signals json.RawMessage) error {
	_, err := s.db.ExecContext(ctx, `UPDATE assets SET quality = coalesce(quality, '{}') || $2 WHERE id = $1`, asset, []byte(signals))
	return err
}
