-- Faces are opt-in per project, and detection only: a face is a box, its
-- eyes' openness, the head's angles and how sharp it is. Nothing here
-- describes a face or could match it with another.
ALTER TABLE projects ADD COLUMN detect_faces boolean NOT NULL DEFAULT false;

-- One row per asset whose faces were looked for, with the summary the
-- lists filter on: a photo without a row was not looked at, one with
-- face_count 0 has no face.
CREATE TABLE face_scans (
    asset_id      uuid PRIMARY KEY REFERENCES assets ON DELETE CASCADE,
    project_id    uuid NOT NULL REFERENCES projects ON DELETE CASCADE,
    model         text NOT NULL,
    width_px      int NOT NULL,  -- of the preview the faces were found in
    height_px     int NOT NULL,
    face_count    int NOT NULL,
    eyes_closed   int NOT NULL,  -- faces whose eyes are closed
    out_of_focus  int NOT NULL,  -- faces softer than faces.SoftBelow
    min_sharpness real,          -- of the softest face; null without faces
    scanned_at    timestamptz NOT NULL DEFAULT now()
);
-- Switching faces off deletes a project's scans in one statement.
CREATE INDEX face_scans_project ON face_scans (project_id);

-- The faces of a scan, in the provider's order. Boxes and points are
-- fractions of the image; left and right are the person's own.
CREATE TABLE faces (
    asset_id     uuid NOT NULL REFERENCES face_scans ON DELETE CASCADE,
    n            int NOT NULL,
    box_x        real NOT NULL,
    box_y        real NOT NULL,
    box_w        real NOT NULL,
    box_h        real NOT NULL,
    score        real NOT NULL,
    eye_left     real,           -- openness; null when the provider has no mesh
    eye_right    real,
    yaw          real,
    pitch        real,
    roll         real,
    landmarks    jsonb,
    sharpness    real NOT NULL,
    eyes_closed  boolean NOT NULL,
    out_of_focus boolean NOT NULL,
    PRIMARY KEY (asset_id, n)
);
