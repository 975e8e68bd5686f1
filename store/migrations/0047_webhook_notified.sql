-- Webhooks hear of an event after the commit that records it, so a crash
-- or a failed write in between would lose the report. The row of each
-- event notes in notified_at which of its states was told (deliveries
-- recorded, or nobody subscribed): a batch's completed_at, an export's or
-- a failed job's updated_at. The sweeper tells again every ended state the
-- mark does not name; rows that ended before this migration count as told.
ALTER TABLE batches ADD COLUMN notified_at timestamptz;
UPDATE batches SET notified_at = completed_at WHERE completed_at IS NOT NULL;
CREATE INDEX batches_unnotified ON batches (completed_at)
    WHERE completed_at IS NOT NULL AND notified_at IS DISTINCT FROM completed_at;

-- Live exports are in the index too: there are few.
ALTER TABLE exports ADD COLUMN notified_at timestamptz;
UPDATE exports SET notified_at = updated_at;
CREATE INDEX exports_unnotified ON exports (updated_at)
    WHERE status <> 'expired' AND notified_at IS DISTINCT FROM updated_at;

-- An asset's failure is told with the job that failed it; a failed job
-- that failed no asset is marked with nothing to tell.
ALTER TABLE jobs ADD COLUMN notified_at timestamptz;
UPDATE jobs SET notified_at = updated_at WHERE status = 'failed' AND asset_id IS NOT NULL;
CREATE INDEX jobs_unnotified ON jobs (updated_at)
    WHERE status = 'failed' AND asset_id IS NOT NULL AND notified_at IS DISTINCT FROM updated_at;
