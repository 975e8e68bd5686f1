package store

import (
	"context"

	"github.com/google/uuid"
)

const batchColumns = `b.id, b.project_id, b.user_id, b.kind, b.status, b.total, b.completed, b.failed, b.created_at, b.completed_at`

// Batch returns owner's batch id.
func (s *Store) Batch(ctx context.Context, owner, id uuid.UUID) (*Batch, error) {
	b := &Batch{}
	err := s.db.GetContext(ctx, b, `SELECT `+batchColumns+` FROM batches b JOIN projects p ON p.id = b.project_id
		WHERE b.id = $1 AND p.owner_user_id = $2`, id, owner)
	return b, notFound(err)
}

// BatchJobs lists a batch's jobs in the order they were recorded.
func (s *Store) BatchJobs(ctx context.Context, batch uuid.UUID) ([]Job, error) {
	var jobs []Job
	err := s.db.SelectContext(ctx, &jobs, `SELECT `+jobColumns+` FROM jobs j WHERE j.batch_id = $1 ORDER BY j.created_at, j.id`, batch)
	return jobs, err
}

// CancelBatch marks a batch cancelled and its unfinished jobs canceled, and
// returns those jobs so their tasks can be removed from the queue.
func (s *Store) CancelBatch(ctx context.Context, batch uuid.UUID) ([]Job, *Batch, error) {
	var jobs []Job
	var b *Batch
	err := s.WithTx(ctx, func(tx *Store) error {
		// The batch first: a finalize adding jobs to it holds this row until it
		// commits, so the jobs below include them.
		if _, err := tx.db.ExecContext(ctx, `SELECT 1 FROM batches WHERE id = $1 FOR UPDATE`, batch); err != nil {
			return err
		}
		if err := tx.db.SelectContext(ctx, &jobs, `UPDATE jobs j SET status = 'canceled', next_run_at = NULL, updated_at = now()
			WHERE j.batch_id = $1 AND j.status IN ('queued', 'running') RETURNING `+jobColumns, batch); err != nil {
			return err
		}
		if _, err := tx.db.ExecContext(ctx, `UPDATE batches SET status = 'cancelled', completed_at = coalesce(completed_at, now())
			WHERE id = $1 AND status = 'running'`, batch); err != nil {
			return err
		}
		var err error
		b, err = tx.RecountBatch(ctx, batch)
		return err
	})
	return jobs, b, err
}

// FailedJobs lists a batch's failed jobs, or just one of them.
func (s *Store) FailedJobs(ctx context.Context, batch uuid.UUID, only *uuid.UUID) ([]Job, error) {
	var jobs []Job
	err := s.db.SelectContext(ctx, &jobs, `SELECT `+jobColumns+` FROM jobs j
		WHERE j.batch_id = $1 AND j.status = 'failed' AND ($2::uuid IS NULL OR j.id = $2) ORDER BY j.created_at, j.id`, batch, only)
	return jobs, err
}

// RecentBatches lists a project's newest batches.
func (s *Store) RecentBatches(ctx context.Context, project uuid.UUID, limit int) ([]Batch, error) {
	var bs []Batch
	err := s.db.SelectContext(ctx, &bs, `SELECT `+batchColumns+` FROM batches b WHERE b.project_id = $1
		ORDER BY b.created_at DESC LIMIT $2`, project, limit)
	return bs, err
}
