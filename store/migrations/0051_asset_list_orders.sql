-- The orders a project's list of assets can take besides upload order:
-- capture time (an upload's time for a photo without one) and file name
-- by its bytes. Each index walks a page in order, so the first page of
-- 100,000 photos reads one page's worth of rows.
CREATE INDEX assets_project_captured ON assets (project_id, (coalesce(captured_at, created_at)), id);
CREATE INDEX assets_project_filename ON assets (project_id, (filename COLLATE "C"), id);
