-- An export is built in steps, each a few photos rendered into files of
-- their own, and put together at the end; a step can yield the worker to
-- other work and the next run goes on where it stopped. plan is the
-- photos it covers, fixed when it first starts (a project's photos can
-- change meanwhile); items_done how many of them are handled, rendered
-- or skipped; pages the contact sheet pages drawn.
ALTER TABLE exports ADD COLUMN plan uuid[];
ALTER TABLE exports ADD COLUMN items_done int NOT NULL DEFAULT 0;
ALTER TABLE exports ADD COLUMN pages int NOT NULL DEFAULT 0;
