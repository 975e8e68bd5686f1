-- A batch is one request that started work; a job is one task of it. The
-- worker, not the enqueuer, moves a job through its states, so a retry
-- started anywhere (API, Asynqmon) shows up here.
CREATE TABLE batches (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects ON DELETE CASCADE,
    user_id      uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    kind         text NOT NULL,
    status       text NOT NULL DEFAULT 'running' CHECK (status IN
                     ('running', 'completed', 'partial', 'failed', 'cancelled')),
    total        int NOT NULL DEFAULT 0,
    completed    int NOT NULL DEFAULT 0,
    failed       int NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz
);
CREATE INDEX batches_project_created ON batches (project_id, created_at DESC);

CREATE TABLE jobs (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects ON DELETE CASCADE,
    asset_id      uuid REFERENCES assets ON DELETE CASCADE,
    batch_id      uuid REFERENCES batches ON DELETE CASCADE,
    type          text NOT NULL,
    queue         text NOT NULL,
    task_id       text NOT NULL,
    payload       jsonb NOT NULL DEFAULT '{}', -- the task's payload, to enqueue it again if it is lost
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN
                      ('queued', 'running', 'done', 'failed', 'canceled')),
    progress      real NOT NULL DEFAULT 0,
    attempt       int NOT NULL DEFAULT 0,
    error_code    text,
    error_message text,
    next_run_at   timestamptz,
    enqueued_at   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_project_created ON jobs (project_id, created_at DESC, id DESC);
CREATE INDEX jobs_batch ON jobs (batch_id);
CREATE INDEX jobs_asset ON jobs (asset_id);
-- The sweeper looks for work recorded but never handed to the queue.
CREATE INDEX jobs_unenqueued ON jobs (created_at) WHERE enqueued_at IS NULL AND status = 'queued';

CREATE TABLE exports (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects ON DELETE CASCADE,
    user_id      uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    preset       text NOT NULL,
    settings     jsonb NOT NULL DEFAULT '{}',
    asset_ids    uuid[],
    status       text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'failed', 'canceled')),
    progress     real NOT NULL DEFAULT 0,
    blob_key     text,
    byte_size    bigint,
    skipped      jsonb NOT NULL DEFAULT '[]',
    error_code   text,
    error_message text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz
);
CREATE INDEX exports_project_created ON exports (project_id, created_at DESC);
