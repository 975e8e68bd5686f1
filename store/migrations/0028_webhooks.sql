-- Webhooks: a user's endpoints and the events each wants, and one row per
-- delivery. The secret signs deliveries, so it is kept as given (a hash
-- could not sign); the API never shows it after creation.
CREATE TABLE webhooks (
    id          uuid PRIMARY KEY,
    user_id     uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    url         text NOT NULL,
    events      text[] NOT NULL,
    secret      text NOT NULL,
    disabled_at timestamptz, -- set when the endpoint answered 410 Gone
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_user_created ON webhooks (user_id, created_at DESC, id DESC);

-- A delivery's id is derived from its webhook, event and subject, so an
-- event reported twice records one delivery. Its job has the same id.
CREATE TABLE webhook_deliveries (
    id              uuid PRIMARY KEY,
    webhook_id      uuid NOT NULL REFERENCES webhooks ON DELETE CASCADE,
    event           text NOT NULL,
    payload         jsonb NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
    attempts        int NOT NULL DEFAULT 0,
    response_status int,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz
);
CREATE INDEX webhook_deliveries_webhook_created ON webhook_deliveries (webhook_id, created_at DESC, id DESC);

-- A ping belongs to no project, so neither does its job.
ALTER TABLE jobs ALTER COLUMN project_id DROP NOT NULL;
