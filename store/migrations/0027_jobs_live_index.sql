-- The sweeper walks the jobs recorded as in the queue, in creation order,
-- to compare them with Asynq's state; this keeps each page cheap however
-- many finished jobs the table holds.
CREATE INDEX jobs_live ON jobs (created_at, id) WHERE status IN ('queued', 'running') AND enqueued_at IS NOT NULL;
