CREATE TABLE projects (
    id            uuid PRIMARY KEY,
    owner_user_id uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    title         text NOT NULL,
    description   text NOT NULL DEFAULT '',
    shoot_date    date,
    timezone      text,
    status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived', 'deleted')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
-- Listing pages walk (created_at, id) backwards for one owner.
CREATE INDEX projects_owner_created ON projects (owner_user_id, created_at DESC, id DESC);

-- A replayable answer to a POST carrying Idempotency-Key. A row with a null
-- status_code is a request still in flight.
CREATE TABLE idempotency_keys (
    user_id      uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    key          text NOT NULL,
    method       text NOT NULL,
    path         text NOT NULL,
    request_hash bytea NOT NULL,
    status_code  int,
    content_type text,
    body         bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, key)
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
