-- A project of 100,000 photos.

-- Asset counts by project and status, kept by triggers, so stats (and
-- every project lookup, which carries them) read a few dozen rows rather
-- than counting the project's assets. Each connection adds to its own
-- shard, so concurrent ingest transactions never wait on one counter row.
-- No foreign key: the triggers still fire while a project's assets are
-- deleted by cascade.
CREATE TABLE project_asset_counts (
    project_id uuid NOT NULL,
    status     text NOT NULL,
    shard      smallint NOT NULL,
    n          bigint NOT NULL,
    PRIMARY KEY (project_id, status, shard)
);

-- One function per event: a statement-level trigger sees only the
-- transition tables of its own event.
CREATE FUNCTION count_assets_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO project_asset_counts AS c (project_id, status, shard, n)
    SELECT project_id, status, pg_backend_pid() % 8, count(*) FROM new_rows GROUP BY project_id, status
    ON CONFLICT (project_id, status, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    RETURN NULL;
END $$;

CREATE FUNCTION count_assets_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO project_asset_counts AS c (project_id, status, shard, n)
    SELECT project_id, status, pg_backend_pid() % 8, -count(*) FROM old_rows GROUP BY project_id, status
    ON CONFLICT (project_id, status, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    RETURN NULL;
END $$;

CREATE FUNCTION count_assets_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO project_asset_counts AS c (project_id, status, shard, n)
    SELECT d.project_id, d.status, pg_backend_pid() % 8, sum(d.n)
    FROM (SELECT project_id, status, 1 AS n FROM new_rows
          UNION ALL
          SELECT project_id, status, -1 FROM old_rows) d
    GROUP BY d.project_id, d.status HAVING sum(d.n) <> 0
    ON CONFLICT (project_id, status, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    RETURN NULL;
END $$;

CREATE TRIGGER assets_count_insert AFTER INSERT ON assets REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_assets_inserted();
CREATE TRIGGER assets_count_delete AFTER DELETE ON assets REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_assets_deleted();
CREATE TRIGGER assets_count_update AFTER UPDATE ON assets REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_assets_updated();

INSERT INTO project_asset_counts (project_id, status, shard, n)
SELECT project_id, status, 0, count(*) FROM assets GROUP BY project_id, status;

-- What search matches, kept beside the row (to_char is not immutable, so
-- this cannot be a generated column or an expression index): file name
-- split on separators, camera, lens and capture date in words.
ALTER TABLE assets ADD COLUMN search_doc tsvector;

CREATE FUNCTION assets_search_doc() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_doc :=
        setweight(to_tsvector('simple', regexp_replace(NEW.filename, '[._-]+', ' ', 'g')), 'A') ||
        setweight(to_tsvector('simple', concat_ws(' ', NEW.camera_make, NEW.camera_model, NEW.lens_model)), 'B') ||
        setweight(to_tsvector('simple', coalesce(to_char(NEW.captured_at AT TIME ZONE 'UTC', 'YYYY-MM-DD YYYY FMMonth FMDay'), '')), 'C');
    RETURN NEW;
END $$;

CREATE TRIGGER assets_search_doc BEFORE INSERT OR UPDATE OF filename, camera_make, camera_model, lens_model, captured_at
    ON assets FOR EACH ROW EXECUTE FUNCTION assets_search_doc();

UPDATE assets SET filename = filename;

CREATE INDEX assets_search ON assets USING gin (search_doc);

-- The in-memory vector copies the server keeps for /similar catch up on
-- the vectors stored since they last looked.
CREATE INDEX embeddings_model_created ON embeddings (model, created_at);
