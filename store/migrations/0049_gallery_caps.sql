-- Caps on what a gallery's viewers leave behind: before one more viewer or
-- comment is recorded, the gallery's live viewers and its comments (and
-- the viewer's, by gallery_comments_viewer) are counted. The comments
-- index also serves the owner's list, oldest first, a page at a time.
CREATE INDEX gallery_viewers_gallery ON gallery_viewers (gallery_id, expires_at);
CREATE INDEX gallery_comments_gallery ON gallery_comments (gallery_id, created_at, id);
