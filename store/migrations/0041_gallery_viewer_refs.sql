-- The purge deletes expired gallery viewers without favourites: both
-- tables that point at a viewer are looked up by it.
CREATE INDEX gallery_favorites_viewer ON gallery_favorites (viewer_id);
CREATE INDEX gallery_comments_viewer ON gallery_comments (viewer_id);
