-- A person's colour label of an asset, as Lightroom and the XMP Label
-- have them, beside their stars and flags. The list and search filters
-- read it through the rating they already join.
ALTER TABLE ratings ADD COLUMN color_label text
    CHECK (color_label IN ('red', 'yellow', 'green', 'blue', 'purple'));
