-- Client galleries: a chosen set of a project's photos shown at a public
-- slug, optionally behind a password (an argon2id hash) and an expiry.
CREATE TABLE galleries (
    id              uuid PRIMARY KEY,
    project_id      uuid NOT NULL REFERENCES projects ON DELETE CASCADE,
    title           text NOT NULL,
    slug            text NOT NULL UNIQUE,
    password_hash   text,
    -- Counts password changes: a viewer token holds the version it was
    -- given under, so a new or removed password ends the old tokens.
    auth_version    int NOT NULL DEFAULT 0,
    expires_at      timestamptz,
    watermark       boolean NOT NULL DEFAULT false,
    allow_downloads boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX galleries_project ON galleries (project_id, created_at DESC);

-- The photos of a gallery, in the order they were added, with the
-- watermarked preview gallery:render made for it.
CREATE TABLE gallery_assets (
    gallery_id    uuid NOT NULL REFERENCES galleries ON DELETE CASCADE,
    asset_id      uuid NOT NULL REFERENCES assets ON DELETE CASCADE,
    seq           bigserial,
    watermark_key text,
    added_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (gallery_id, asset_id)
);
CREATE INDEX gallery_assets_asset ON gallery_assets (asset_id);

-- A viewer is one opened gallery: the holder of a token (stored as its
-- SHA-256) that reaches that gallery only, until it expires.
CREATE TABLE gallery_viewers (
    id         uuid PRIMARY KEY,
    gallery_id uuid NOT NULL REFERENCES galleries ON DELETE CASCADE,
    token_hash bytea NOT NULL UNIQUE,
    auth_version int NOT NULL,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX gallery_viewers_expires_at ON gallery_viewers (expires_at);

CREATE TABLE gallery_favorites (
    gallery_id uuid NOT NULL,
    asset_id   uuid NOT NULL,
    viewer_id  uuid NOT NULL REFERENCES gallery_viewers ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (gallery_id, asset_id, viewer_id),
    FOREIGN KEY (gallery_id, asset_id) REFERENCES gallery_assets ON DELETE CASCADE
);

CREATE TABLE gallery_comments (
    id         uuid PRIMARY KEY,
    gallery_id uuid NOT NULL,
    asset_id   uuid NOT NULL,
    viewer_id  uuid REFERENCES gallery_viewers ON DELETE SET NULL,
    body       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (gallery_id, asset_id) REFERENCES gallery_assets ON DELETE CASCADE
);
CREATE INDEX gallery_comments_asset ON gallery_comments (gallery_id, asset_id, created_at);
