package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// EditVersion is one set of adjustments of an asset.
type EditVersion struct {
	ID        uuid.UUID       `db:"id"`
	AssetID   uuid.UUID       `db:"asset_id"`
	ProjectID uuid.UUID       `db:"project_id"`
	UserID    uuid.UUID       `db:"user_id"`
	ParentID  *uuid.UUID      `db:"parent_id"`
	Name      string          `db:"name"`
	Params    json.RawMessage `db:"params"`
	AppliedAt *time.Time      `db:"applied_at"`
	CreatedAt time.Time       `db:"created_at"`
}

const editSelect = `SELECT e.id, e.asset_id, a.project_id, e.user_id, e.parent_id, e.name, e.params, e.applied_at, e.created_at
	FROM edit_versions e JOIN assets a ON a.id = e.asset_id`

// EditVersions lists an asset's versions, oldest first.
func (s *Store) EditVersions(ctx context.Context, asset uuid.UUID) ([]EditVersion, error) {
	var out []EditVersion
	err := s.db.SelectContext(ctx, &out, editSelect+` WHERE e.asset_id = $1 ORDER BY e.created_at, e.id`, asset)
	return out, err
}

// EditVersion returns version id, if owner owns its asset.
func (s *Store) EditVersion(ctx context.Context, owner, id uuid.UUID) (*EditVersion, error) {
	e := &EditVersion{}
	err := s.db.GetContext(ctx, e, editSelect+` JOIN projects p ON p.id = a.project_id WHERE e.id = $1 AND p.owner_user_id = $2`, id, owner)
	return e, notFound(err)
}

// EditVersionByID returns version id whoever owns it; for the worker.
func (s *Store) EditVersionByID(ctx context.Context, id uuid.UUID) (*EditVersion, error) {
	e := &EditVersion{}
	err := s.db.GetContext(ctx, e, editSelect+` WHERE e.id = $1`, id)
	return e, notFound(err)
}

// EditTarget is one asset an edit goes onto.
type EditTarget struct {
	AssetID uuid.UUID
	// Overwrite changes the asset's latest version instead of adding one
	// (adding one when it has none).
	Overwrite bool
	Name      string
	ParentID  *uuid.UUID
	Params    json.RawMessage
}

// ApplyEdits records a version on each target asset of project, in one
// transaction, and returns the versions in the targets' order. Targets
// outside the project answer ForeignAssetsError, targets without an
// original NoOriginalError, and record nothing.
func (s *Store) ApplyEdits(ctx context.Context, user, project uuid.UUID, targets []EditTarget) ([]EditVersion, error) {
	versions := make([]EditVersion, len(targets))
	err := s.WithTx(ctx, func(tx *Store) error {
		ids := make([]uuid.UUID, len(targets))
		for i, t := range targets {
			ids[i] = t.AssetID
		}
		foreign, err := tx.ForeignAssets(ctx, project, ids)
		if err != nil {
			return err
		}
		if len(foreign) > 0 {
			return &ForeignAssetsError{IDs: foreign}
		}
		without, err := tx.withoutOriginal(ctx, ids)
		if err != nil {
			return err
		}
		if len(without) > 0 {
			return &NoOriginalError{IDs: without}
		}
		for i, t := range targets {
			v := &versions[i]
			err := tx.db.GetContext(ctx, v, `
				WITH latest AS (
					SELECT id FROM edit_versions WHERE asset_id = $2 AND $6 ORDER BY created_at DESC, id DESC LIMIT 1 FOR UPDATE
				), updated AS (
					UPDATE edit_versions SET params = $5, name = coalesce(nullif($4, ''), name), applied_at = NULL, updated_at = now()
					WHERE id = (SELECT id FROM latest) RETURNING *
				), inserted AS (
					INSERT INTO edit_versions (id, asset_id, user_id, parent_id, name, params)
					SELECT $1, $2, $3, $7, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM updated) RETURNING *
				)
				SELECT r.id, r.asset_id, $8::uuid AS project_id, r.user_id, r.parent_id, r.name, r.params, r.applied_at, r.created_at
				FROM (SELECT * FROM updated UNION ALL SELECT * FROM inserted) r`,
				uuid.New(), t.AssetID, user, t.Name, string(t.Params), t.Overwrite, t.ParentID, project)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return versions, nil
}

// NewestEdit reports whether version is its asset's newest: only the
// newest one's render becomes the asset's edit files.
func (s *Store) NewestEdit(ctx context.Context, version uuid.UUID) (bool, error) {
	var newest bool
	err := s.db.GetContext(ctx, &newest, `
		SELECT NOT EXISTS (SELECT 1 FROM edit_versions v JOIN edit_versions n ON n.asset_id = v.asset_id
		                   WHERE v.id = $1 AND (n.created_at, n.id) > (v.created_at, v.id))`, version)
	return newest, err
}

// SaveEditRender records version's render as its asset's edit files and
// marks the version applied, if it is still the asset's newest; it reports
// whether it did. The asset's row is locked first, so a version added
// meanwhile is seen.
func (s *Store) SaveEditRender(ctx context.Context, version uuid.UUID, files ...AssetFile) (bool, error) {
	var saved bool
	err := s.WithTx(ctx, func(tx *Store) error {
		if _, err := tx.db.ExecContext(ctx, `SELECT 1 FROM assets a JOIN edit_versions v ON v.asset_id = a.id
			WHERE v.id = $1 FOR UPDATE OF a`, version); err != nil {
			return err
		}
		newest, err := tx.NewestEdit(ctx, version)
		if err != nil || !newest {
			return err
		}
		if err := tx.upsertFiles(ctx, files); err != nil {
			return err
		}
		_, err = tx.db.ExecContext(ctx, `UPDATE edit_versions SET applied_at = now() WHERE id = $1`, version)
		saved = err == nil
		return err
	})
	return saved, err
}
