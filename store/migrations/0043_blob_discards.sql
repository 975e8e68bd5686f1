-- Originals finalize discarded (a duplicate's or a checksum mismatch's
-- bytes). Finalize deletes them at once, but an upload URL on S3 can put
-- the object back for as long as it lives, so the sweeper deletes each
-- key again once its URL has expired, then forgets it.
CREATE TABLE blob_discards (
    blob_key       text PRIMARY KEY,
    url_expires_at timestamptz NOT NULL
);
CREATE INDEX blob_discards_due ON blob_discards (url_expires_at);
