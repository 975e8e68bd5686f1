-- When an asset's thumbnail was first made: ahead of its ingest by the
-- thumbnail task, or by the ingest itself. A photo shows in the grid from
-- then on, before it is ready to cull.
ALTER TABLE assets ADD COLUMN thumbnail_at timestamptz;
