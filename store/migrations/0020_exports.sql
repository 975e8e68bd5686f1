-- Exports: the batch and job that build each one, when the build started,
-- and an 'expired' state for exports whose file the sweeper has deleted.
ALTER TABLE exports DROP CONSTRAINT exports_status_check;
ALTER TABLE exports ADD CONSTRAINT exports_status_check
    CHECK (status IN ('queued', 'running', 'done', 'failed', 'canceled', 'expired'));
ALTER TABLE exports ADD COLUMN batch_id uuid REFERENCES batches ON DELETE SET NULL;
ALTER TABLE exports ADD COLUMN job_id uuid REFERENCES jobs ON DELETE SET NULL;
ALTER TABLE exports ADD COLUMN started_at timestamptz;
-- The sweeper looks for finished exports past their expiry.
CREATE INDEX exports_expiring ON exports (expires_at) WHERE status = 'done';
