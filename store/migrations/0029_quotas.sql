-- Per-user quotas. A null limit on a user means the configured default; 0
-- means no limit.
ALTER TABLE users ADD COLUMN quota_bytes bigint CHECK (quota_bytes >= 0);
ALTER TABLE users ADD COLUMN quota_files_in_flight int CHECK (quota_files_in_flight >= 0);
ALTER TABLE users ADD COLUMN quota_exports int CHECK (quota_exports >= 0);

-- The bytes of originals each user keeps, maintained by a trigger on assets
-- so that checking a quota never sums a whole library.
CREATE TABLE user_usage (
    user_id      uuid PRIMARY KEY REFERENCES users ON DELETE CASCADE,
    bytes_stored bigint NOT NULL DEFAULT 0
);

-- The bytes an asset keeps in storage: its original once accepted, also
-- when processing failed later. Duplicates and bad checksums were
-- discarded, and expired uploads were never accepted.
CREATE FUNCTION asset_stored_bytes(status text, finalized_at timestamptz, error_code text, byte_size bigint, upload_size bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN status IN ('uploaded', 'cull', 'search', 'ai') THEN coalesce(upload_size, byte_size)
        WHEN status = 'failed' AND finalized_at IS NOT NULL AND error_code IS DISTINCT FROM 'checksum_mismatch'
            THEN coalesce(upload_size, byte_size)
        ELSE 0
    END
$$;

-- Counted per statement, from its transition tables: a finalize of a
-- thousand assets is one update of its owner's row, not a thousand (updates
-- of one row within a transaction grow slower with each).
CREATE FUNCTION assets_count_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO user_usage AS u (user_id, bytes_stored)
        SELECT p.owner_user_id, sum(asset_stored_bytes(n.status, n.finalized_at, n.error_code, n.byte_size, n.upload_size))
        FROM new_rows n JOIN projects p ON p.id = n.project_id
        GROUP BY p.owner_user_id HAVING sum(asset_stored_bytes(n.status, n.finalized_at, n.error_code, n.byte_size, n.upload_size)) <> 0
        ON CONFLICT (user_id) DO UPDATE SET bytes_stored = greatest(u.bytes_stored + excluded.bytes_stored, 0);
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO user_usage AS u (user_id, bytes_stored)
        SELECT p.owner_user_id, sum(c.bytes)
        FROM (SELECT project_id, asset_stored_bytes(status, finalized_at, error_code, byte_size, upload_size) AS bytes FROM new_rows
              UNION ALL
              SELECT project_id, -asset_stored_bytes(status, finalized_at, error_code, byte_size, upload_size) FROM old_rows) c
        JOIN projects p ON p.id = c.project_id
        GROUP BY p.owner_user_id HAVING sum(c.bytes) <> 0
        ON CONFLICT (user_id) DO UPDATE SET bytes_stored = greatest(u.bytes_stored + excluded.bytes_stored, 0);
    ELSE
        -- Assets deleted with their project (and its owner) find no
        -- project: there is nobody left to count for.
        INSERT INTO user_usage AS u (user_id, bytes_stored)
        SELECT p.owner_user_id, -sum(asset_stored_bytes(o.status, o.finalized_at, o.error_code, o.byte_size, o.upload_size))
        FROM old_rows o JOIN projects p ON p.id = o.project_id
        GROUP BY p.owner_user_id HAVING sum(asset_stored_bytes(o.status, o.finalized_at, o.error_code, o.byte_size, o.upload_size)) <> 0
        ON CONFLICT (user_id) DO UPDATE SET bytes_stored = greatest(u.bytes_stored + excluded.bytes_stored, 0);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER assets_usage_insert AFTER INSERT ON assets
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION assets_count_usage();
CREATE TRIGGER assets_usage_update AFTER UPDATE ON assets
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION assets_count_usage();
CREATE TRIGGER assets_usage_delete AFTER DELETE ON assets
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION assets_count_usage();

INSERT INTO user_usage (user_id, bytes_stored)
SELECT u.id, coalesce(sum(asset_stored_bytes(a.status, a.finalized_at, a.error_code, a.byte_size, a.upload_size)), 0)
FROM users u
LEFT JOIN projects p ON p.owner_user_id = u.id
LEFT JOIN assets a ON a.project_id = p.id
GROUP BY u.id;

-- Uploads in flight and live exports are few per user (the quotas bound
-- them), so they are counted when asked, through these indexes.
CREATE INDEX assets_in_flight ON assets (project_id, upload_expires_at) INCLUDE (byte_size)
    WHERE status = 'pending_upload';
CREATE INDEX exports_user_live ON exports (user_id) WHERE status IN ('queued', 'running', 'done');
