-- Culling: each person's rating of an asset, and what they note on the
-- asset itself (keywords, notes, IPTC fields, the app's own flags).
CREATE TABLE ratings (
    asset_id   uuid NOT NULL REFERENCES assets ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    rating     smallint CHECK (rating BETWEEN 1 AND 5),
    picked     boolean NOT NULL DEFAULT false,
    rejected   boolean NOT NULL DEFAULT false,
    starred    boolean NOT NULL DEFAULT false,
    notes      text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (asset_id, user_id),
    CHECK (NOT (picked AND rejected))
);
-- The list filters (picked, rejected, ratingMin) look a person's ratings up
-- by asset.
CREATE INDEX ratings_user ON ratings (user_id, asset_id);

ALTER TABLE assets
    ADD COLUMN keywords   text[] NOT NULL DEFAULT '{}',
    ADD COLUMN notes      text NOT NULL DEFAULT '',
    ADD COLUMN iptc       jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN user_flags jsonb NOT NULL DEFAULT '{}';
