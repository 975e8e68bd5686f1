-- Each run of an export takes it over with a token of its own, and its
-- later writes name it: a run a later one superseded (handed back at a
-- stop, or its lease lost) can no longer change the export.
ALTER TABLE exports ADD COLUMN run_token uuid;
