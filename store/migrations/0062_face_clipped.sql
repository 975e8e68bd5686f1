-- Each face's share of pixels with a channel clipped, and the middle face's
-- for the photo: a blown face is an overexposed photo even where the rest
-- of the frame (dark hair, a dark backdrop) keeps its midtones. Null for
-- faces scanned before it was measured.
ALTER TABLE faces ADD COLUMN clipped real;
ALTER TABLE face_scans ADD COLUMN faces_clipped real;
