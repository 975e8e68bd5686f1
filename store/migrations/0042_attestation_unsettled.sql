-- Queue items not yet attested, counted by state at every metrics scrape
-- without reading the attested ones, which only grow.
CREATE INDEX attestation_queue_unsettled ON attestation_queue (status) WHERE status <> 'attested';
