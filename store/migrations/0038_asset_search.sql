-- Search reads a table of its own. A photo's row in assets is wide
-- (metadata, paths, hashes), and on a 100,000-photo project a search
-- matching most of it spent more time stepping over those columns to the
-- document at the row's end than matching it. asset_search holds only
-- what a search matches, filters and orders by, a quarter of the bytes;
-- triggers on assets keep it.
CREATE TABLE asset_search (
    asset_id    uuid PRIMARY KEY REFERENCES assets (id) ON DELETE CASCADE,
    project_id  uuid NOT NULL,
    status      text NOT NULL,
    captured_at timestamptz,
    camera      text NOT NULL, -- make and model, as the camera filter matches them
    doc         tsvector NOT NULL
);

CREATE INDEX asset_search_project ON asset_search (project_id, captured_at DESC NULLS LAST, asset_id);
CREATE INDEX asset_search_doc ON asset_search USING gin (doc);

-- The document: file name split on separators, camera, lens and capture
-- date in words, in the 'simple' configuration, which keeps names and
-- models as they are written.
CREATE FUNCTION asset_search_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO asset_search (asset_id, project_id, status, captured_at, camera, doc)
    VALUES (NEW.id, NEW.project_id, NEW.status, NEW.captured_at, concat_ws(' ', NEW.camera_make, NEW.camera_model),
        setweight(to_tsvector('simple', regexp_replace(NEW.filename, '[._-]+', ' ', 'g')), 'A') ||
        setweight(to_tsvector('simple', concat_ws(' ', NEW.camera_make, NEW.camera_model, NEW.lens_model)), 'B') ||
        setweight(to_tsvector('simple', coalesce(to_char(NEW.captured_at AT TIME ZONE 'UTC', 'YYYY-MM-DD YYYY FMMonth FMDay'), '')), 'C'))
    ON CONFLICT (asset_id) DO UPDATE SET project_id = EXCLUDED.project_id, status = EXCLUDED.status,
        captured_at = EXCLUDED.captured_at, camera = EXCLUDED.camera, doc = EXCLUDED.doc;
    RETURN NULL;
END $$;

CREATE TRIGGER asset_search_insert AFTER INSERT ON assets
    FOR EACH ROW EXECUTE FUNCTION asset_search_sync();
CREATE TRIGGER asset_search_update AFTER UPDATE ON assets
    FOR EACH ROW WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.status IS DISTINCT FROM NEW.status
        OR OLD.filename IS DISTINCT FROM NEW.filename OR OLD.camera_make IS DISTINCT FROM NEW.camera_make
        OR OLD.camera_model IS DISTINCT FROM NEW.camera_model OR OLD.lens_model IS DISTINCT FROM NEW.lens_model
        OR OLD.captured_at IS DISTINCT FROM NEW.captured_at)
    EXECUTE FUNCTION asset_search_sync();

INSERT INTO asset_search (asset_id, project_id, status, captured_at, camera, doc)
SELECT id, project_id, status, captured_at, concat_ws(' ', camera_make, camera_model), coalesce(search_doc, ''::tsvector) FROM assets;

DROP TRIGGER assets_search_doc ON assets;
DROP FUNCTION assets_search_doc();
ALTER TABLE assets DROP COLUMN search_doc; -- and its index
