-- Users, their API keys (only a SHA-256 of each key is kept: keys are 256
-- random bits, so a slow hash adds nothing) and browser sessions.
CREATE TABLE users (
    id         uuid PRIMARY KEY,
    email      text NOT NULL,
    is_admin   boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    name         text NOT NULL DEFAULT '',
    prefix       text NOT NULL,
    key_hash     bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_user_id ON api_keys (user_id);

-- A session belongs to the key it was opened with, so revoking the key ends it.
CREATE TABLE sessions (
    token_hash bytea PRIMARY KEY,
    api_key_id uuid NOT NULL REFERENCES api_keys ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_expires_at ON sessions (expires_at);
