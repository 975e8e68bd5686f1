-- Edit versions: a person's non-destructive adjustments of an asset, each
-- a set of validated params. The latest applied version's render is the
-- asset's edit_preview and edit_thumbnail.
CREATE TABLE edit_versions (
    id         uuid PRIMARY KEY,
    asset_id   uuid NOT NULL REFERENCES assets ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    parent_id  uuid REFERENCES edit_versions ON DELETE SET NULL,
    name       text NOT NULL DEFAULT '',
    params     jsonb NOT NULL,
    applied_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX edit_versions_asset ON edit_versions (asset_id, created_at);

ALTER TABLE asset_files DROP CONSTRAINT asset_files_kind_check;
ALTER TABLE asset_files ADD CONSTRAINT asset_files_kind_check
    CHECK (kind IN ('original', 'thumbnail', 'preview', 'edit_preview', 'edit_thumbnail'));
