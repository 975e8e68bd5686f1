package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"lightbox/ptr"
)

// Project groups the assets of one shoot or job.
type Project struct {
	ID          uuid.UUID  `db:"id"`
	OwnerUserID uuid.UUID  `db:"owner_user_id"`
	Title       string     `db:"title"`
	Description string     `db:"description"`
	ShootDate   *time.Time `db:"shoot_date"`
	Timezone    *string    `db:"timezone"`
	Status      string     `db:"status"`
	DetectFaces bool       `db:"detect_faces"` // faces are looked for in its photos
	CreatedAt   time.Time  `db:"created_at"`
	UpdatedAt   time.Time  `db:"updated_at"`
	ProjectStats
}

// ProjectStats counts a project's assets by stage.
type ProjectStats struct {
	Total      int `db:"total" json:"total"`
	Uploading  int `db:"uploading" json:"uploading"`
	Processing int `db:"processing" json:"processing"`
	Embedding  int `db:"embedding" json:"embedding"`
	Ready      int `db:"ready" json:"ready"`
	Failed     int `db:"failed" json:"failed"`
}

// statsColumns sums a project's asset counts (project_asset_counts c, kept
// by triggers on assets) into ProjectStats; duplicates are not counted
// since they point at another asset.
const statsColumns = `
	coalesce(sum(c.n) FILTER (WHERE c.status <> 'duplicate'), 0)::bigint AS total,
	coalesce(sum(c.n) FILTER (WHERE c.status = 'pending_upload'), 0)::bigint AS uploading,
	coalesce(sum(c.n) FILTER (WHERE c.status = 'uploaded'), 0)::bigint AS processing,
	coalesce(sum(c.n) FILTER (WHERE c.status = 'cull'), 0)::bigint AS embedding,
	coalesce(sum(c.n) FILTER (WHERE c.status IN ('search', 'ai')), 0)::bigint AS ready,
	coalesce(sum(c.n) FILTER (WHERE c.status = 'failed'), 0)::bigint AS failed`

const projectSelect = `
	SELECT p.id, p.owner_user_id, p.title, p.description, p.shoot_date, p.timezone, p.status, p.detect_faces,
	       p.created_at, p.updated_at, st.*
	FROM projects p
	CROSS JOIN LATERAL (SELECT ` + statsColumns + ` FROM project_asset_counts c WHERE c.project_id = p.id) st`

// ProjectInput holds the fields a client may set. Nil leaves a field alone.
type ProjectInput struct {
	Title       *string
	Description *string
	ShootDate   **time.Time
	Timezone    **string
	Status      *string
	// DetectFaces switches faces on or off; off deletes the project's faces.
	DetectFaces *bool
}

// CreateProject adds a project owned by owner.
func (s *Store) CreateProject(ctx context.Context, owner uuid.UUID, title, description string, shootDate *time.Time, tz *string) (*Project, error) {
	id := uuid.New()
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO projects (id, owner_user_id, title, description, shoot_date, timezone)
		VALUES ($1, $2, $3, $4, $5, $6)`, id, owner, title, description, shootDate, tz)
	if err != nil {
		return nil, err
	}
	return s.Project(ctx, owner, id)
}

// Project returns owner's project id. Another user's project is ErrNotFound.
func (s *Store) Project(ctx context.Context, owner, id uuid.UUID) (*Project, error) {
	p := &Project{}
	err := s.db.GetContext(ctx, p, projectSelect+` WHERE p.id = $1 AND p.owner_user_id = $2`, id, owner)
	return p, notFound(err)
}

// Projects lists owner's projects, newest first, limit at a time.
func (s *Store) Projects(ctx context.Context, owner uuid.UUID, after *Cursor, limit int) (Page[Project], error) {
	var rows []Project
	// Without a cursor, start after a position later than any row.
	afterTime, afterID := time.Now().Add(time.Hour), uuid.Max
	if after != nil {
		afterTime, afterID = after.Time, after.ID
	}
	err := s.db.SelectContext(ctx, &rows, projectSelect+`
		WHERE p.owner_user_id = $1 AND p.status <> 'deleted' AND (p.created_at, p.id) < ($2, $3)
		ORDER BY p.created_at DESC, p.id DESC LIMIT $4`, owner, afterTime, afterID, limit+1)
	if err != nil {
		return Page[Project]{}, err
	}
	return pageOf(rows, limit, func(p Project) Cursor { return Cursor{Time: p.CreatedAt, ID: p.ID} }), nil
}

// UpdateProject applies in to owner's project id.
func (s *Store) UpdateProject(ctx context.Context, owner, id uuid.UUID, in ProjectInput) (*Project, error) {
	// COALESCE-free form: a flag per column says whether to set it, so a
	// client can clear a nullable field with an explicit null.
	var shoot *time.Time
	var tz *string
	if in.ShootDate != nil {
		shoot = *in.ShootDate
	}
	if in.Timezone != nil {
		tz = *in.Timezone
	}
	err := s.WithTx(ctx, func(tx *Store) error {
		res, err := tx.db.ExecContext(ctx, `
			UPDATE projects SET
				title = CASE WHEN $3 THEN $4 ELSE title END,
				description = CASE WHEN $5 THEN $6 ELSE description END,
				shoot_date = CASE WHEN $7 THEN $8::date ELSE shoot_date END,
				timezone = CASE WHEN $9 THEN $10 ELSE timezone END,
				status = CASE WHEN $11 THEN $12 ELSE status END,
				detect_faces = CASE WHEN $13 THEN $14 ELSE detect_faces END,
				updated_at = now()
			WHERE id = $1 AND owner_user_id = $2`,
			id, owner,
			in.Title != nil, ptr.Value(in.Title),
			in.Description != nil, ptr.Value(in.Description),
			in.ShootDate != nil, shoot,
			in.Timezone != nil, tz,
			in.Status != nil, ptr.Value(in.Status),
			in.DetectFaces != nil, ptr.Value(in.DetectFaces))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		if in.DetectFaces != nil && !*in.DetectFaces {
			// In the update's transaction: a scan being saved holds the
			// project's row, so it is deleted here once it is written.
			return tx.deleteFaces(ctx, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.Project(ctx, owner, id)
}

// ProjectOwner returns who owns a project; for the worker.
func (s *Store) ProjectOwner(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	var owner uuid.UUID
	err := s.db.GetContext(ctx, &owner, `SELECT owner_user_id FROM projects WHERE id = $1`, id)
	return owner, notFound(err)
}
