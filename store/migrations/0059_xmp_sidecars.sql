-- XMP sidecars: the NAME.xmp or NAME.EXT.xmp a photographer's editor
-- keeps beside a photo, stored as one of the asset's files.
ALTER TABLE asset_files DROP CONSTRAINT asset_files_kind_check;
ALTER TABLE asset_files ADD CONSTRAINT asset_files_kind_check
    CHECK (kind IN ('original', 'thumbnail', 'preview', 'edit_preview', 'edit_thumbnail', 'xmp_sidecar'));

-- When the sidecar last wrote the owner's rating. A rating row last
-- changed at that moment holds the sidecar's decision, not one made by
-- hand, so a later sidecar may replace it.
ALTER TABLE assets ADD COLUMN sidecar_rated_at timestamptz;
