-- RAW+JPEG pairs: a camera writes both files of one shot, with one base
-- name and capture time. Each names the other; deleting one leaves the
-- other alone and unpaired.
ALTER TABLE assets ADD COLUMN pair_asset_id uuid REFERENCES assets (id) ON DELETE SET NULL;

-- Finding a new photo's partner looks among its project's photos of the
-- same base name.
CREATE INDEX assets_pair_base ON assets (project_id, lower(regexp_replace(filename, '\.[^.]*$', '')));
