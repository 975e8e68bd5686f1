package store

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// Job is one task's record.
type Job struct {
	ID           uuid.UUID       `db:"id"`
	ProjectID    uuid.UUID       `db:"project_id"`
	AssetID      *uuid.UUID      `db:"asset_id"`
	BatchID      *uuid.UUID      `db:"batch_id"`
	Type         string          `db:"type"`
	Queue        string          `db:"queue"`
	TaskID       string          `db:"task_id"`
	Payload      json.RawMessage `db:"payload"`
	Status       JobStatus       `db:"status"`
	Progress     float64         `db:"progress"`
	Attempt      int             `db:"attempt"`
	ErrorCode    *string         `db:"error_code"`
	ErrorMessage *string         `db:"error_message"`
	NextRunAt    *time.Time      `db:"next_run_at"`
	EnqueuedAt   *time.Time      `db:"enqueued_at"`
	CreatedAt    time.Time       `db:"created_at"`
	UpdatedAt    time.Time       `db:"updated_at"`
}

// Batch groups the jobs one request started.
type Batch struct {
	ID          uuid.UUID  `db:"id"`
	ProjectID   uuid.UUID  `db:"project_id"`
	UserID      uuid.UUID  `db:"user_id"`
	Kind        string     `db:"kind"`
	Status      string     `db:"status"`
	Total       int        `db:"total"`
	Completed   int        `db:"completed"`
	Failed      int        `db:"failed"`
	CreatedAt   time.Time  `db:"created_at"`
	CompletedAt *time.Time `db:"completed_at"`
}

const jobColumns = `j.id, j.project_id, j.asset_id, j.batch_id, j.type, j.queue, j.task_id, j.payload, j.status,
	j.progress, j.attempt, j.error_code, j.error_message, j.next_run_at, j.enqueued_at, j.created_at, j.updated_at`

// Batch kinds: the request that started a batch's work.
const (
	BatchUpload    = "upload"
	BatchImport    = "import"
	BatchReprocess = "reprocess"
	BatchEdit      = "edit"
	BatchExport    = "export"
	BatchGallery   = "gallery"
)

// CreateBatch records an empty batch of kind for the work user starts in
// project; InsertJobs fills it.
func (s *Store) CreateBatch(ctx context.Context, project, user uuid.UUID, kind string) (*Batch, error) {
	b := &Batch{}
	err := s.db.GetContext(ctx, b, `
		INSERT INTO batches (id, project_id, user_id, kind) VALUES ($1, $2, $3, $4)
		RETURNING id, project_id, user_id, kind, status, total, completed, failed, created_at, completed_at`,
		uuid.New(), project, user, kind)
	return b, err
}

// InsertJobs records jobs in s's transaction, or in one of its own, and
// returns them as recorded. A job joins its batch: the batch counts it and
// runs again, unless it was cancelled, and then the job is recorded
// canceled. A job whose id is recorded already is that job: one that
// ended is queued again, a live one stays as it is. Once the transaction
// commits, its Store hands the queued jobs over (see WithHandOver).
//
// Jobs build their rows from the task table; callers use jobs.Insert.
func (s *Store) InsertJobs(ctx context.Context, jobs []Job) ([]Job, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	if !s.tx {
		var out []Job
		err := s.WithTx(ctx, func(tx *Store) error {
			var err error
			out, err = tx.InsertJobs(ctx, jobs)
			return err
		})
		return out, err
	}
	n := len(jobs)
	ids, projects, assets, batches := make([]string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	types, queues, taskIDs, payloads := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, j := range jobs {
		ids[i], types[i], queues[i], taskIDs[i], payloads[i] = j.ID.String(), j.Type, j.Queue, j.TaskID, string(j.Payload)
		// A webhook ping's job has no project.
		projects[i] = idOrNull(&j.ProjectID)
		assets[i], batches[i] = idOrNull(j.AssetID), idOrNull(j.BatchID)
	}
	var rows []struct {
		Job
		// Inserted is false for a job that was recorded already: xmax is
		// 0 only in a row this statement inserted.
		Inserted bool `db:"inserted"`
	}
	if err := s.db.SelectContext(ctx, &rows, `
		INSERT INTO jobs AS j (id, project_id, asset_id, batch_id, type, queue, task_id, payload, status)
		SELECT u.id, u.project, u.asset, u.batch, u.type, u.queue, u.task, u.payload,
			CASE WHEN b.status = 'cancelled' THEN 'canceled' ELSE 'queued' END
		FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::jsonb[])
			AS u(id, project, asset, batch, type, queue, task, payload)
		LEFT JOIN batches b ON b.id = u.batch
		ON CONFLICT (id) DO UPDATE SET status = CASE WHEN j.status IN ('done', 'failed', 'canceled') THEN 'queued' ELSE j.status END,
			enqueued_at = NULL, updated_at = now()
		RETURNING `+jobColumns+`, j.xmax = 0 AS inserted`,
		pq.Array(ids), pq.Array(projects), pq.Array(assets), pq.Array(batches), pq.Array(types),
		pq.Array(queues), pq.Array(taskIDs), pq.Array(payloads)); err != nil {
		return nil, err
	}
	// Returned in the order given: RETURNING follows no order.
	at := make(map[uuid.UUID]int, n)
	for i, j := range jobs {
		at[j.ID] = i
	}
	out := make([]Job, n)
	joined := map[uuid.UUID]int{}
	for _, r := range rows {
		out[at[r.ID]] = r.Job
		if r.BatchID != nil {
			n := joined[*r.BatchID]
			if r.Inserted {
				n++
			}
			joined[*r.BatchID] = n
		}
		if r.Status == JobQueued {
			*s.recorded = append(*s.recorded, r.Job)
		}
	}
	// Batches are locked in one order, so two writers cannot deadlock.
	for _, id := range slices.SortedFunc(maps.Keys(joined), compareIDs) {
		if _, err := s.db.ExecContext(ctx, `UPDATE batches SET total = total + $2,
				status = CASE WHEN status = 'cancelled' THEN status ELSE 'running' END,
				completed_at = CASE WHEN status = 'cancelled' THEN completed_at END
			WHERE id = $1`, id, joined[id]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// idOrNull is id as a query parameter: NULL for nil or uuid.Nil.
func idOrNull(id *uuid.UUID) *string {
	if id == nil || *id == uuid.Nil {
		return nil
	}
	s := id.String()
	return &s
}

// ClaimEnqueue notes that jobs are being handed to the queue and returns
// the ids it noted. A job another caller claimed first is left out: two
// callers admitting the same job at once (a worker filling freed room,
// the sweep) send its task once. Sent without a claim, the second copy
// would arrive after the first ran, when Asynq no longer holds its
// TaskID, and run the job again.
func (s *Store) ClaimEnqueue(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var claimed []uuid.UUID
	err := s.db.SelectContext(ctx, &claimed, `UPDATE jobs SET enqueued_at = now()
		WHERE id = ANY($1) AND enqueued_at IS NULL RETURNING id`, pq.Array(ids))
	return claimed, err
}

// UnclaimEnqueue gives back the claims of jobs whose task could not be
// sent, so the sweep finds them never handed over. A job that started
// meanwhile (the send went through after all) keeps its claim.
func (s *Store) UnclaimEnqueue(ctx context.Context, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `UPDATE jobs SET enqueued_at = NULL
		WHERE id = ANY($1) AND status = 'queued'`, pq.Array(ids))
	return err
}

// QueueCaps cap how many jobs of one batch, and of one user's batches,
// are in each queue at once, so a huge batch cannot fill the queue ahead
// of a small one started after it, nor one user's uploads ahead of
// another's. The jobs past a cap wait in Postgres until admitted. 0 is no
// cap.
type QueueCaps struct {
	Batch int // the most jobs of one batch in the queue at once
	User  int // the most jobs of one user's batches in one queue at once
	// ByQueue sets User apart for the queues it names: a queue whose every
	// job is costly (exports) admits fewer of one user's at once.
	ByQueue map[string]int
}

// user is the cap on one user's batch jobs in queue.
func (c QueueCaps) user(queue string) int {
	if n, ok := c.ByQueue[queue]; ok {
		return n
	}
	return c.User
}

// uncapped stands for a cap of 0 in the queries' arithmetic.
const uncapped = 1 << 30

func (c QueueCaps) bound(n int) int {
	if n <= 0 {
		return uncapped
	}
	return n
}

// UserQueue is one user's batch jobs in one queue: what QueueCaps.User
// caps, and the unit in which waiting jobs are admitted.
type UserQueue struct {
	User  uuid.UUID `db:"user_id"`
	Queue string    `db:"queue"`
}

// AdmissibleJobs lists the jobs of uq's user in its queue, from the
// user's batches, recorded before cutoff and not in the queue, that may
// join it now: at most the user cap of uq's queue (caps.ByQueue, else
// caps.User) of uq and caps.Batch of one batch in the
// queue at once, counting those already there. The oldest batch goes
// first, and within a batch the oldest job. Jobs wait here because a cap
// is reached, or because the enqueue after their commit failed.
//
// It walks the user's running batches (a batch with a job not ended is
// running) only until uq's room is filled, so its cost does not grow with
// the length of the user's backlog.
func (s *Store) AdmissibleJobs(ctx context.Context, uq UserQueue, cutoff time.Time, caps QueueCaps) ([]Job, error) {
	var jobs []Job
	err := s.db.SelectContext(ctx, &jobs, `
		SELECT `+jobColumns+` FROM batches b CROSS JOIN LATERAL (
			SELECT j.* FROM jobs j
			WHERE j.batch_id = b.id AND j.queue = $2 AND j.enqueued_at IS NULL AND j.status = 'queued'
			  AND j.created_at < $3
			ORDER BY j.created_at, j.id
			LIMIT greatest(0, $4 - (SELECT count(*) FROM jobs l
				WHERE l.batch_id = b.id AND l.enqueued_at IS NOT NULL AND l.status IN ('queued', 'running')))
		) j
		WHERE b.user_id = $1 AND b.status = 'running'
		ORDER BY b.created_at, b.id, j.created_at, j.id
		LIMIT greatest(0, $5 - (SELECT count(*) FROM jobs l JOIN batches lb ON lb.id = l.batch_id
			WHERE lb.user_id = $1 AND l.queue = $2 AND l.enqueued_at IS NOT NULL AND l.status IN ('queued', 'running')))`,
		uq.User, uq.Queue, cutoff, caps.bound(caps.Batch), caps.bound(caps.user(uq.Queue)))
	return jobs, err
}

// UserQueuesOf lists the user queues that jobs of running batches belong
// to, and apart the jobs of batches that are not running. Those wait
// outside any admission (AdmissibleJobs walks running batches only): a
// failed job of a cancelled batch run again, or a task of an ended batch
// run again from Asynqmon whose Redis data was then lost. Jobs of no
// batch, or of one gone, are in neither.
func (s *Store) UserQueuesOf(ctx context.Context, jobs []Job) (uqs []UserQueue, outside []Job, err error) {
	var ids []uuid.UUID
	for _, j := range jobs {
		if j.BatchID != nil {
			ids = append(ids, *j.BatchID)
		}
	}
	var batches []struct {
		ID      uuid.UUID `db:"id"`
		User    uuid.UUID `db:"user_id"`
		Running bool      `db:"running"`
	}
	if err := s.db.SelectContext(ctx, &batches, `SELECT id, user_id, status = 'running' AS running
		FROM batches WHERE id = ANY($1)`, pq.Array(ids)); err != nil {
		return nil, nil, err
	}
	type batch struct {
		user    uuid.UUID
		running bool
	}
	of := make(map[uuid.UUID]batch, len(batches))
	for _, b := range batches {
		of[b.ID] = batch{b.User, b.Running}
	}
	for _, j := range jobs {
		if j.BatchID == nil {
			continue
		}
		b, ok := of[*j.BatchID]
		switch {
		case !ok:
		case !b.running:
			outside = append(outside, j)
		case !slices.Contains(uqs, UserQueue{User: b.user, Queue: j.Queue}):
			uqs = append(uqs, UserQueue{User: b.user, Queue: j.Queue})
		}
	}
	return uqs, outside, nil
}

// WaitingUserQueues lists up to limit user queues with batch jobs
// recorded before cutoff and not in the queue.
func (s *Store) WaitingUserQueues(ctx context.Context, cutoff time.Time, limit int) ([]UserQueue, error) {
	var uqs []UserQueue
	err := s.db.SelectContext(ctx, &uqs, `
		SELECT DISTINCT b.user_id, j.queue FROM jobs j JOIN batches b ON b.id = j.batch_id
		WHERE j.enqueued_at IS NULL AND j.status = 'queued' AND j.created_at < $1
		LIMIT $2`, cutoff, limit)
	return uqs, err
}

// StrandedJobs lists up to limit jobs recorded before cutoff and not in
// the queue that no admission hands over, oldest first: jobs of no batch,
// and jobs of batches that are not running (see UserQueuesOf). The enqueue
// after their commit failed, or Redis lost them.
//
// The batches with waiting jobs are found by skipping through
// jobs_batch_waiting one batch at a time, and only those not running are
// read further: a backlog of 100,000 jobs waiting in 1,000 running batches
// costs about 8 ms, where testing every waiting job's batch costs 36.
func (s *Store) StrandedJobs(ctx context.Context, cutoff time.Time, limit int) ([]Job, error) {
	var jobs []Job
	err := s.db.SelectContext(ctx, &jobs, `
		WITH RECURSIVE waiting(batch_id) AS (
			(SELECT batch_id FROM jobs WHERE batch_id IS NOT NULL AND enqueued_at IS NULL AND status = 'queued'
				ORDER BY batch_id LIMIT 1)
			UNION ALL
			SELECT (SELECT j.batch_id FROM jobs j
				WHERE j.batch_id > w.batch_id AND j.enqueued_at IS NULL AND j.status = 'queued'
				ORDER BY j.batch_id LIMIT 1)
			FROM waiting w WHERE w.batch_id IS NOT NULL),
		outside AS MATERIALIZED (
			SELECT b.id FROM waiting w JOIN batches b ON b.id = w.batch_id WHERE b.status <> 'running')
		SELECT `+jobColumns+` FROM (
			(SELECT * FROM jobs WHERE batch_id IS NULL AND enqueued_at IS NULL AND status = 'queued' AND created_at < $1
				ORDER BY created_at, id LIMIT $2)
			UNION ALL
			SELECT j.* FROM outside o JOIN jobs j ON j.batch_id = o.id
				AND j.enqueued_at IS NULL AND j.status = 'queued' AND j.created_at < $1
		) j ORDER BY j.created_at, j.id LIMIT $2`, cutoff, limit)
	return jobs, err
}

// LiveJobs lists jobs recorded as handed to the queue and not yet ended
// (queued or running, enqueued) that have not changed since cutoff, in
// (created_at, id) order after the cursor: the jobs whose task should be in
// Redis, for the sweeper to compare with Asynq's own state.
func (s *Store) LiveJobs(ctx context.Context, cutoff time.Time, after *Cursor, limit int) ([]Job, error) {
	afterTime, afterID := time.Time{}, uuid.Nil
	if after != nil {
		afterTime, afterID = after.Time, after.ID
	}
	var jobs []Job
	err := s.db.SelectContext(ctx, &jobs, `SELECT `+jobColumns+` FROM jobs j
		WHERE j.status IN ('queued', 'running') AND j.enqueued_at IS NOT NULL AND j.updated_at < $1
		  AND (j.created_at, j.id) > ($2, $3)
		ORDER BY j.created_at, j.id LIMIT $4`, cutoff, afterTime, afterID, limit)
	return jobs, err
}

// MarkNotEnqueued notes that jobs' tasks are no longer in the queue (Redis
// lost them), so queue caps stop counting them and AdmissibleJobs hands
// them over again. A job that ended meanwhile is left as it is.
func (s *Store) MarkNotEnqueued(ctx context.Context, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `UPDATE jobs SET enqueued_at = NULL, status = 'queued', updated_at = now()
		WHERE id = ANY($1) AND status IN ('queued', 'running')`, pq.Array(ids))
	return err
}

// JobFilter narrows a job listing.
type JobFilter struct {
	Status JobStatus
	Type   string
}

// Jobs lists a project's jobs, newest first.
func (s *Store) Jobs(ctx context.Context, project uuid.UUID, f JobFilter, after *Cursor, limit int) (Page[Job], error) {
	var rows []Job
	afterTime, afterID := time.Now().Add(time.Hour), uuid.Max
	if after != nil {
		afterTime, afterID = after.Time, after.ID
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT `+jobColumns+` FROM jobs j
		WHERE j.project_id = $1 AND ($2 = '' OR j.status = $2) AND ($3 = '' OR j.type = $3)
		  AND (j.created_at, j.id) < ($4, $5)
		ORDER BY j.created_at DESC, j.id DESC LIMIT $6`, project, f.Status, f.Type, afterTime, afterID, limit+1)
	if err != nil {
		return Page[Job]{}, err
	}
	return pageOf(rows, limit, func(j Job) Cursor { return Cursor{Time: j.CreatedAt, ID: j.ID} }), nil
}

// Reprocess puts asset a back to 'uploaded' for its ingest to run again,
// which the caller records in the same transaction. A failed asset whose
// bytes another live asset holds now is a *DuplicateError.
func (s *Store) Reprocess(ctx context.Context, a *Asset) error {
	// Its ingest makes the thumbnail again too.
	_, err := s.db.ExecContext(ctx, `UPDATE assets SET status = 'uploaded', error_code = NULL, error_message = NULL,
		thumbnail_at = NULL, updated_at = now() WHERE id = $1`, a.ID)
	return s.duplicateOf(ctx, a.ID, err)
}

// RequeueJob puts a job that runs again (from the archive) back to queued
// and recounts its batch. With resetAsset (a job whose failure failed its
// asset) a failed asset goes back to 'uploaded' too.
//
// A failed asset whose bytes another live asset holds now cannot come back:
// that is a *DuplicateError, and nothing changes.
func (s *Store) RequeueJob(ctx context.Context, id uuid.UUID, resetAsset bool) error {
	var asset uuid.UUID
	err := s.WithTx(ctx, func(tx *Store) error {
		var j Job
		err := tx.db.GetContext(ctx, &j, `UPDATE jobs j SET status = 'queued', error_code = NULL, error_message = NULL,
			next_run_at = now(), enqueued_at = NULL, updated_at = now() WHERE j.id = $1 RETURNING `+jobColumns, id)
		if err != nil {
			return notFound(err)
		}
		if resetAsset && j.AssetID != nil {
			asset = *j.AssetID
			if _, err := tx.db.ExecContext(ctx, `UPDATE assets SET status = 'uploaded', error_code = NULL, error_message = NULL,
				updated_at = now() WHERE id = $1 AND status = 'failed'`, *j.AssetID); err != nil {
				return err
			}
		}
		if j.BatchID != nil {
			if _, err := tx.db.ExecContext(ctx, `UPDATE batches SET status = 'running', completed_at = NULL WHERE id = $1 AND status <> 'cancelled'`, *j.BatchID); err != nil {
				return err
			}
			_, err = tx.RecountBatch(ctx, *j.BatchID)
		}
		return err
	})
	return s.duplicateOf(ctx, asset, err)
}

// JobByID returns a job whatever its owner; for the worker.
func (s *Store) JobByID(ctx context.Context, id uuid.UUID) (*Job, error) {
	j := &Job{}
	err := s.db.GetContext(ctx, j, `SELECT `+jobColumns+` FROM jobs j WHERE j.id = $1`, id)
	return j, notFound(err)
}
