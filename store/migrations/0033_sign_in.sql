-- Sign-in by a code sent by mail. A challenge exists for every address
-- asked about, known or not (user_id NULL), so the answers look alike. A
-- signed-in device gets its own API key; its access tokens are sessions of
-- that key (short-lived) and its refresh tokens below, so revoking the key
-- ends them all.
CREATE TABLE sign_in_challenges (
    id         uuid PRIMARY KEY,
    email      text NOT NULL,
    user_id    uuid REFERENCES users ON DELETE CASCADE,
    code_hash  bytea NOT NULL,
    attempts   int NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sign_in_challenges_expires_at ON sign_in_challenges (expires_at);

CREATE TABLE refresh_tokens (
    token_hash bytea PRIMARY KEY,
    api_key_id uuid NOT NULL REFERENCES api_keys ON DELETE CASCADE,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refresh_tokens_expires_at ON refresh_tokens (expires_at);
