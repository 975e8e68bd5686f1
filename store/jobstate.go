package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Job states.
const (
	JobQueued   = "queued"
	JobRunning  = "running"
	JobDone     = "done"
	JobFailed   = "failed"
	JobCanceled = "canceled"
)

// JobStarted records that attempt (1-based) of a job began. A job already
// canceled stays so and the caller should stop.
func (s *Store) JobStarted(ctx context.Context, id uuid.UUID, attempt int) (*Job, error) {
	j := &Job{}
	err := s.db.GetContext(ctx, j, `
		UPDATE jobs j SET status = CASE WHEN j.status = 'canceled' THEN 'canceled' ELSE 'running' END,
			attempt = $2, next_run_at = NULL, error_code = NULL, error_message = NULL,
			enqueued_at = coalesce(j.enqueued_at, now()), updated_at = now()
		WHERE j.id = $1
		RETURNING `+jobColumns, id, attempt)
	return j, notFound(err)
}

// JobRetrying records a failed attempt that will run again at next.
func (s *Store) JobRetrying(ctx context.Context, id uuid.UUID, next time.Time, code, message string) (*Job, error) {
	j := &Job{}
	err := s.db.GetContext(ctx, j, `
		UPDATE jobs j SET status = 'queued', next_run_at = $2, error_code = $3, error_message = $4, updated_at = now()
		WHERE j.id = $1 AND j.status <> 'canceled'
		RETURNING `+jobColumns, id, next, code, message)
	return j, notFound(err)
}

// JobFinished records a job's end, done or failed, and brings its batch's
// counters and status up to date in the same transaction. Counters are
// recounted from the jobs, so a task that runs twice or a retried job
// cannot make them drift.
func (s *Store) JobFinished(ctx context.Context, id uuid.UUID, status, code, message string) (*Job, *Batch, error) {
	j := &Job{}
	var b *Batch
	err := s.WithTx(ctx, func(tx *Store) error {
		err := tx.db.GetContext(ctx, j, `
			UPDATE jobs j SET status = $2, progress = CASE WHEN $2 = 'done' THEN 1 ELSE j.progress END,
				error_code = nullif($3, ''), error_message = nullif($4, ''), next_run_at = NULL, updated_at = now()
			WHERE j.id = $1 AND j.status <> 'canceled'
			RETURNING `+jobColumns, id, status, code, message)
		if err != nil {
			return notFound(err)
		}
		if j.BatchID != nil {
			b, err = tx.RecountBatch(ctx, *j.BatchID)
		}
		return err
	})
	return j, b, err
}

// RecountBatch recomputes a batch's counters and status from its jobs.
//
// The batch row is locked before the jobs are counted, in a statement of
// its own: two jobs of a batch ending at once then recount one after the
// other, the second counting with the first committed. Counting in the
// same statement as the update would read the jobs as they were before the
// lock was granted, and the batch would miss the other job for good.
func (s *Store) RecountBatch(ctx context.Context, id uuid.UUID) (*Batch, error) {
	b := &Batch{}
	err := s.WithTx(ctx, func(tx *Store) error {
		var locked uuid.UUID
		if err := tx.db.GetContext(ctx, &locked, `SELECT id FROM batches WHERE id = $1 FOR UPDATE`, id); err != nil {
			return notFound(err)
		}
		return notFound(tx.db.GetContext(ctx, b, `
		WITH c AS (
			SELECT count(*) AS total,
			       count(*) FILTER (WHERE status = 'done') AS done,
			       count(*) FILTER (WHERE status = 'failed') AS failed,
			       count(*) FILTER (WHERE status = 'canceled') AS canceled
			FROM jobs WHERE batch_id = $1)
		UPDATE batches b SET completed = c.done, failed = c.failed,
			status = CASE
				WHEN b.status = 'cancelled' THEN 'cancelled'
				WHEN c.done + c.failed + c.canceled < c.total THEN 'running'
				WHEN c.failed = 0 AND c.canceled = 0 THEN 'completed'
				WHEN c.done = 0 THEN 'failed'
				ELSE 'partial' END,
			completed_at = CASE WHEN c.done + c.failed + c.canceled < c.total THEN NULL
				ELSE coalesce(b.completed_at, now()) END
		FROM c WHERE b.id = $1
		RETURNING b.id, b.project_id, b.user_id, b.kind, b.status, b.total, b.completed, b.failed, b.created_at, b.completed_at`, id))
	})
	return b, err
}
