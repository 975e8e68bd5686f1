-- How a gallery shows its photos to clients: their file names, when the
-- owner allows it, and where its watermark goes and how light it is.
ALTER TABLE galleries
    ADD COLUMN show_file_names boolean NOT NULL DEFAULT false,
    ADD COLUMN watermark_position text NOT NULL DEFAULT 'corner'
        CHECK (watermark_position IN ('corner', 'center')),
    ADD COLUMN watermark_opacity double precision NOT NULL DEFAULT 0.3
        CHECK (watermark_opacity BETWEEN 0.05 AND 1);
