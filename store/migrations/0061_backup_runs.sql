-- Scheduled backups (BACKUP_SCHEDULE): one row a run, for the admin page
-- and /metrics. A run the worker died in stays 'running'.
CREATE TABLE backup_runs (
    id           uuid PRIMARY KEY,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    status       text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'failed')),
    location     text NOT NULL,
    backup_id    text,
    bytes        bigint NOT NULL DEFAULT 0,
    files_copied integer NOT NULL DEFAULT 0,
    error        text NOT NULL DEFAULT ''
);

-- The last success and the last failure are read at every scrape.
CREATE INDEX backup_runs_status_finished ON backup_runs (status, finished_at DESC);
