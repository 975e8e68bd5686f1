-- Assisted culling: the assistant suggests rejects and picks, and never
-- overrides what the photographer decided by hand. assisted is true while
-- a rating's flag, stars or label are the ones the assistant wrote; any
-- decision made by hand sets it back to false.
ALTER TABLE ratings ADD COLUMN assisted boolean NOT NULL DEFAULT false;

-- The hand decisions a person's strictness is learned from, newest first,
-- across all their projects.
CREATE INDEX ratings_hand_decisions ON ratings (user_id, updated_at)
    WHERE NOT assisted AND (picked OR rejected OR rating IS NOT NULL OR color_label IS NOT NULL);

-- A person's own strictness per criterion (a number 0–1, or null: off; a
-- missing criterion takes the default), and since when their decisions
-- teach it: resetting forgets what was learned before.
CREATE TABLE cull_preferences (
    user_id     uuid PRIMARY KEY REFERENCES users ON DELETE CASCADE,
    strictness  jsonb NOT NULL DEFAULT '{}',
    learn_since timestamptz NOT NULL DEFAULT '-infinity',
    updated_at  timestamptz NOT NULL DEFAULT now()
);
