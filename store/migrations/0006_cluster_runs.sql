-- The debounce of project:cluster. A project with scheduled_for set has a
-- run waiting; assets that become ready meanwhile join it. Once the run
-- starts, scheduled_for is cleared, so assets arriving during the run
-- schedule the next one. Each run has its own number and so its own
-- TaskID: Asynq refuses a TaskID that still exists.
CREATE TABLE cluster_runs (
    project_id    uuid PRIMARY KEY REFERENCES projects ON DELETE CASCADE,
    run           bigint NOT NULL DEFAULT 0,
    scheduled_for timestamptz,
    enqueued_at   timestamptz,
    done_run      bigint NOT NULL DEFAULT 0, -- the last run that finished
    started_at    timestamptz,
    finished_at   timestamptz
);
CREATE INDEX cluster_runs_scheduled ON cluster_runs (scheduled_for) WHERE scheduled_for IS NOT NULL;
