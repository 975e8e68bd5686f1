package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// What operators see across users, and what the pages ask of one asset.

// AdminJob is a job with whose and what it was for.
type AdminJob struct {
	Job
	OwnerEmail    string  `db:"owner_email"`
	ProjectTitle  string  `db:"project_title"`
	AssetFilename *string `db:"asset_filename"`
}

// A job without a project (a webhook ping) is listed with its webhook's owner.
const adminJobSelect = `SELECT ` + jobColumns + `, u.email AS owner_email, coalesce(p.title, '') AS project_title,
		a.filename AS asset_filename
	FROM jobs j LEFT JOIN projects p ON p.id = j.project_id
	LEFT JOIN webhook_deliveries wd ON j.project_id IS NULL AND wd.id = j.id
	LEFT JOIN webhooks wh ON wh.id = wd.webhook_id
	JOIN users u ON u.id = coalesce(p.owner_user_id, wh.user_id)
	LEFT JOIN assets a ON a.id = j.asset_id`

// AdminJobs lists every user's jobs in status, newest first.
func (s *Store) AdminJobs(ctx context.Context, status JobStatus, after *Cursor, limit int) (Page[AdminJob], error) {
	var rows []AdminJob
	afterTime, afterID := time.Now().Add(time.Hour), uuid.Max
	if after != nil {
		afterTime, afterID = after.Time, after.ID
	}
	err := s.db.SelectContext(ctx, &rows, adminJobSelect+`
		WHERE j.status = $1 AND (j.created_at, j.id) < ($2, $3)
		ORDER BY j.created_at DESC, j.id DESC LIMIT $4`, status, afterTime, afterID, limit+1)
	if err != nil {
		return Page[AdminJob]{}, err
	}
	return pageOf(rows, limit, func(j AdminJob) Cursor { return Cursor{Time: j.CreatedAt, ID: j.ID} }), nil
}

// AdminJob returns any user's job id.
func (s *Store) AdminJob(ctx context.Context, id uuid.UUID) (*AdminJob, error) {
	j := &AdminJob{}
	err := s.db.GetContext(ctx, j, adminJobSelect+` WHERE j.id = $1`, id)
	return j, notFound(err)
}

// DismissJob gives up on a failed job: it becomes canceled and its batch is
// recounted. ErrNotFound when the job is not failed (any more).
func (s *Store) DismissJob(ctx context.Context, id uuid.UUID) (*Job, error) {
	j := &Job{}
	err := s.WithTx(ctx, func(tx *Store) error {
		err := tx.db.GetContext(ctx, j, `UPDATE jobs j SET status = 'canceled', next_run_at = NULL, updated_at = now()
			WHERE j.id = $1 AND j.status = 'failed' RETURNING `+jobColumns, id)
		if err != nil {
			return notFound(err)
		}
		if j.BatchID != nil {
			_, err = tx.RecountBatch(ctx, *j.BatchID)
		}
		return err
	})
	return j, err
}

// AdminBatch is a batch with whose it is.
type AdminBatch struct {
	Batch
	OwnerEmail   string `db:"owner_email"`
	ProjectTitle string `db:"project_title"`
}

// BatchesWithFailures lists every user's batches that have failed jobs,
// newest first.
func (s *Store) BatchesWithFailures(ctx context.Context, after *Cursor, limit int) (Page[AdminBatch], error) {
	var rows []AdminBatch
	afterTime, afterID := time.Now().Add(time.Hour), uuid.Max
	if after != nil {
		afterTime, afterID = after.Time, after.ID
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT `+batchColumns+`, u.email AS owner_email, p.title AS project_title
		FROM batches b JOIN projects p ON p.id = b.project_id JOIN users u ON u.id = p.owner_user_id
		WHERE b.failed > 0 AND (b.created_at, b.id) < ($1, $2)
		ORDER BY b.created_at DESC, b.id DESC LIMIT $3`, afterTime, afterID, limit+1)
	if err != nil {
		return Page[AdminBatch]{}, err
	}
	return pageOf(rows, limit, func(b AdminBatch) Cursor { return Cursor{Time: b.CreatedAt, ID: b.ID} }), nil
}

// AdminBatchExists reports whether any user has batch id.
func (s *Store) AdminBatchExists(ctx context.Context, id uuid.UUID) (bool, error) {
	var ok bool
	err := s.db.GetContext(ctx, &ok, `SELECT EXISTS (SELECT 1 FROM batches WHERE id = $1)`, id)
	return ok, err
}

// AssetJobs lists an asset's jobs in the order they were recorded.
func (s *Store) AssetJobs(ctx context.Context, asset uuid.UUID) ([]Job, error) {
	jobs := []Job{}
	err := s.db.SelectContext(ctx, &jobs, `SELECT `+jobColumns+` FROM jobs j WHERE j.asset_id = $1 ORDER BY j.created_at, j.id`, asset)
	return jobs, err
}
