-- The text drawn across a gallery's watermarked previews, which anonymous
-- viewers see; null draws the gallery's title. Nothing of the owner's
-- account (such as the name part of their address) is drawn any more.
ALTER TABLE galleries ADD COLUMN watermark_text text;
