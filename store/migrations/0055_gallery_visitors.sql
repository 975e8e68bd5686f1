-- A visitor names themself once per gallery: their viewer tokens carry
-- the name and email given, and visitor_key (the email lower-cased, else
-- the name) makes the tokens of one person, on a phone and a laptop or
-- after a token expired, one chooser: their favourites are theirs
-- wherever they come back from. Anonymous viewers have no key.
ALTER TABLE gallery_viewers ADD COLUMN name text;
ALTER TABLE gallery_viewers ADD COLUMN email text;
ALTER TABLE gallery_viewers ADD COLUMN visitor_key text;
CREATE INDEX gallery_viewers_visitor ON gallery_viewers (gallery_id, visitor_key) WHERE visitor_key IS NOT NULL;

-- How many photos one visitor may choose; null for no limit.
ALTER TABLE galleries ADD COLUMN selection_limit int CHECK (selection_limit > 0);
