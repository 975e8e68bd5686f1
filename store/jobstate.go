package store

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"

	"lightbox/ptr"
)

// JobStatus is where a job is in its life, as its row's status says. The
// job engine (jobs/) moves a job between them; each says who moves a job
// out of it. An export's status reads the same words (and expired).
type JobStatus string

const (
	// JobQueued: recorded, its task waiting to run; enqueued_at says
	// whether it was handed to Asynq yet (the caps may hold it back). A
	// worker starting the task makes it running (jobs.Tracker.Run); a
	// cancel makes it canceled (jobs.Dispatcher.CancelBatch).
	JobQueued JobStatus = "queued"
	// JobRunning: a worker runs its task. The run's end makes it done,
	// failed, or queued again with the time of its next run (a retry, a
	// yield, a stopped worker), all written by jobs.Tracker.Run; a cancel
	// makes it canceled, and a lost task queued (jobs.Dispatcher.Reconcile).
	JobRunning JobStatus = "running"
	// JobDone: its task succeeded. Only recording the job again
	// (jobs.Insert of the same id) queues it once more.
	JobDone JobStatus = "done"
	// JobFailed: its task failed for good. A rerun queues it again
	// (jobs.Dispatcher.Rerun), dismissing it cancels it
	// (jobs.Dispatcher.DismissJob).
	JobFailed JobStatus = "failed"
	// JobCanceled: canceled with its batch, its export or by dismissal.
	// Nothing moves it out but recording the job again.
	JobCanceled JobStatus = "canceled"
)

// JobStatus is a job's status, read outside any transaction on a prepared
// statement: a worker asks it before every task it runs, and a prepared
// statement answers in one round trip where a query with parameters takes
// two.
func (s *Store) JobStatus(ctx context.Context, id uuid.UUID) (JobStatus, error) {
	stmt, err := s.prepared(ctx, &s.stmts.jobStatus, `SELECT status FROM jobs WHERE id = $1`)
	if err != nil {
		return "", err
	}
	var status JobStatus
	return status, notFound(stmt.GetContext(ctx, &status, id))
}

// JobFinished records a job's end, done or failed, and brings its batch's
// counters and status up to date in the same transaction. Counters are
// recounted from the jobs, so a task that runs twice or a retried job
// cannot make them drift.
func (s *Store) JobFinished(ctx context.Context, id uuid.UUID, status JobStatus, code, message string) (*Job, *Batch, error) {
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

// JobUpdate is one change of a job's state for RecordJobStates.
type JobUpdate struct {
	ID      uuid.UUID
	Status  JobStatus // running, queued (to run again at NextRun), done or failed
	Attempt int       // 1-based
	Code    string    // the error of a failed attempt
	Message string
	NextRun time.Time // when a queued job runs again
	// FailAsset marks the job's asset failed with the job's error when the
	// job failed for good.
	FailAsset bool
}

// RecordJobStates writes many jobs' state changes at once: one statement
// for the jobs, then the counters of the batches whose jobs ended, in one
// transaction, so a batch never counts a job the jobs table does not show
// ended. A canceled job stays canceled; it and a job that no longer exists
// are left out of the jobs returned. A job must appear at most once.
func (s *Store) RecordJobStates(ctx context.Context, states []JobUpdate) ([]Job, []Batch, error) {
	if len(states) == 0 {
		return nil, nil, nil
	}
	ids := make([]uuid.UUID, len(states))
	status := make([]string, len(states))
	attempts := make([]int64, len(states))
	codes := make([]string, len(states))
	messages := make([]string, len(states))
	next := make([]string, len(states))
	failAsset := map[uuid.UUID]bool{}
	for i, st := range states {
		ids[i], status[i], attempts[i], codes[i], messages[i] = st.ID, string(st.Status), int64(st.Attempt), st.Code, st.Message
		if !st.NextRun.IsZero() {
			next[i] = st.NextRun.UTC().Format(time.RFC3339Nano)
		}
		if st.FailAsset {
			failAsset[st.ID] = true
		}
	}
	var jobs []Job
	var batches []Batch
	err := s.WithTx(ctx, func(tx *Store) error {
		jobs, batches = nil, nil
		// Prepared: the writer sends this many times a second, and a
		// statement with parameters otherwise costs a parse, a plan and a
		// round trip more each time.
		stmt, err := tx.preparedTx(ctx, &tx.stmts.jobStates, `
			UPDATE jobs j SET status = s.status, attempt = s.attempt,
				progress = CASE WHEN s.status = 'done' THEN 1 ELSE j.progress END,
				error_code = nullif(s.code, ''), error_message = nullif(s.message, ''),
				next_run_at = nullif(s.next_run, '')::timestamptz,
				enqueued_at = coalesce(j.enqueued_at, now()), updated_at = now()
			FROM unnest($1::uuid[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[])
				AS s(id, status, attempt, code, message, next_run)
			-- The ids again as an array, so the rows are found through the
			-- primary key: the join alone is planned as a scan of every
			-- job row, dead ones too, at each write.
			WHERE j.id = s.id AND j.id = ANY($1::uuid[]) AND j.status <> 'canceled'
			RETURNING `+jobColumns)
		if err != nil {
			return err
		}
		err = stmt.SelectContext(ctx, &jobs, pq.Array(ids), pq.Array(status), pq.Array(attempts), pq.Array(codes), pq.Array(messages), pq.Array(next))
		if err != nil {
			return err
		}
		ended := map[uuid.UUID]bool{}
		for _, j := range jobs {
			if j.Status != JobDone && j.Status != JobFailed {
				continue
			}
			if j.BatchID != nil {
				ended[*j.BatchID] = true
			}
			if j.Status == JobFailed && failAsset[j.ID] && j.AssetID != nil {
				if err := tx.FailAsset(ctx, *j.AssetID, ptr.Value(j.ErrorCode), ptr.Value(j.ErrorMessage)); err != nil {
					return err
				}
			}
		}
		// Batches are locked in one order, so two writers cannot deadlock.
		order := slices.SortedFunc(maps.Keys(ended), compareIDs)
		for _, id := range order {
			b, err := tx.RecountBatch(ctx, id)
			if err != nil {
				return err
			}
			batches = append(batches, *b)
		}
		return nil
	})
	return jobs, batches, err
}
