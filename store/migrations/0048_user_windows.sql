-- Release windows per user: each user's running batches oldest first, and
-- each batch's jobs in the queue and waiting for it, by queue, so topping
-- up one user's share reads only that user's batches however long the
-- backlog. Jobs of no batch stay out of both.
CREATE INDEX batches_user_running ON batches (user_id, created_at, id) WHERE status = 'running';
CREATE INDEX jobs_batch_live ON jobs (batch_id, queue)
    WHERE batch_id IS NOT NULL AND enqueued_at IS NOT NULL AND status IN ('queued', 'running');
CREATE INDEX jobs_batch_waiting ON jobs (batch_id, queue, created_at, id)
    WHERE batch_id IS NOT NULL AND enqueued_at IS NULL AND status = 'queued';
