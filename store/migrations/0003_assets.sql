-- An asset is one original. status is its readiness: pending_upload until the
-- bytes are finalized, then uploaded → cull → search → ai, or failed, or
-- duplicate (of duplicate_of, an earlier asset with the same bytes).
CREATE TABLE assets (
    id               uuid PRIMARY KEY,
    project_id       uuid NOT NULL REFERENCES projects ON DELETE CASCADE,
    client_file_id   text,
    filename         text NOT NULL,
    content_type     text NOT NULL,
    byte_size        bigint NOT NULL,
    blob_key         text NOT NULL,
    checksum_sha256  text,             -- computed by the server as the bytes arrived
    upload_size      bigint,
    uploaded_at      timestamptz,
    status           text NOT NULL DEFAULT 'pending_upload' CHECK (status IN
                         ('pending_upload', 'uploaded', 'cull', 'search', 'ai', 'failed', 'duplicate')),
    duplicate_of     uuid REFERENCES assets ON DELETE SET NULL,
    upload_expires_at timestamptz,
    finalized_at     timestamptz,
    captured_at      timestamptz,
    captured_offset  text,
    ingested_at      timestamptz,
    width_px         int,
    height_px        int,
    camera_make      text,
    camera_model     text,
    lens_model       text,
    focal_length_mm  double precision,
    shutter_speed    text,
    aperture         double precision,
    iso              int,
    gps_lat          double precision,
    gps_lon          double precision,
    exif             jsonb NOT NULL DEFAULT '{}',
    quality          jsonb NOT NULL DEFAULT '{}',
    metadata_warning text,
    error_code       text,
    error_message    text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX assets_project_created ON assets (project_id, created_at, id);
CREATE INDEX assets_project_status ON assets (project_id, status);
-- One live original per content per project; concurrent finalizes of the
-- same bytes cannot both win.
CREATE UNIQUE INDEX assets_project_checksum ON assets (project_id, checksum_sha256)
    WHERE status NOT IN ('pending_upload', 'failed', 'duplicate');

-- Files derived from an original (and the original itself), one per kind.
CREATE TABLE asset_files (
    asset_id        uuid NOT NULL REFERENCES assets ON DELETE CASCADE,
    kind            text NOT NULL CHECK (kind IN ('original', 'thumbnail', 'preview')),
    blob_key        text NOT NULL,
    content_type    text NOT NULL,
    byte_size       bigint NOT NULL,
    checksum_sha256 text NOT NULL,
    width_px        int,
    height_px       int,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (asset_id, kind)
);

CREATE TABLE perceptual_hashes (
    asset_id   uuid PRIMARY KEY REFERENCES assets ON DELETE CASCADE,
    algorithm  text NOT NULL,
    hash       bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE embeddings (
    asset_id   uuid NOT NULL REFERENCES assets ON DELETE CASCADE,
    model      text NOT NULL,
    vector     real[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (asset_id, model)
);

CREATE TABLE clusters (
    id              uuid PRIMARY KEY,
    project_id      uuid NOT NULL REFERENCES projects ON DELETE CASCADE,
    kind            text NOT NULL CHECK (kind IN ('moment', 'burst', 'duplicate_group')),
    title           text NOT NULL DEFAULT '',
    start_time      timestamptz,
    end_time        timestamptz,
    score           double precision NOT NULL DEFAULT 0,
    reviewed        boolean NOT NULL DEFAULT false,
    winner_asset_id uuid REFERENCES assets ON DELETE SET NULL,
    why_winner      text[] NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX clusters_project_kind ON clusters (project_id, kind, start_time);

CREATE TABLE cluster_assets (
    cluster_id uuid NOT NULL REFERENCES clusters ON DELETE CASCADE,
    asset_id   uuid NOT NULL REFERENCES assets ON DELETE CASCADE,
    rank       int NOT NULL,
    role       text NOT NULL CHECK (role IN ('candidate', 'winner', 'alt')),
    signals    jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (cluster_id, asset_id)
);
CREATE INDEX cluster_assets_asset ON cluster_assets (asset_id);
