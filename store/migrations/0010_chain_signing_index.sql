-- The sweeper looks for attestation items left in signing by a flusher that
-- died; this keeps that look cheap however long the queue's history grows.
CREATE INDEX attestation_queue_signing ON attestation_queue (claimed_at) WHERE status = 'signing';
