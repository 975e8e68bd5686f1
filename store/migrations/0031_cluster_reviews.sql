-- A person's review of a group: the title and winner they chose, their
-- reviewed mark and the app's own overrides. Each cluster run replaces a
-- project's clusters, and carries these over to the new group that holds
-- most of the old one's members (see carryReviews).
ALTER TABLE clusters
    ADD COLUMN manual_title     boolean NOT NULL DEFAULT false,
    ADD COLUMN manual_winner    boolean NOT NULL DEFAULT false,
    ADD COLUMN manual_overrides jsonb;
