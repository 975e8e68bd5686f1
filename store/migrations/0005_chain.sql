-- The attestation chain: originals wait in attestation_queue, are signed in
-- order under a lock on the single chain_head row, and once published become
-- attestations.
CREATE TABLE attestation_queue (
    id         bigserial PRIMARY KEY,
    asset_id   uuid REFERENCES assets ON DELETE SET NULL,
    project_id uuid NOT NULL,
    cid        text NOT NULL,
    op         text NOT NULL DEFAULT 'ingest',
    visibility text NOT NULL DEFAULT 'private',
    ts         timestamptz NOT NULL DEFAULT now(),
    status     text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'signing', 'attested', 'failed', 'abandoned')),
    attempts   int NOT NULL DEFAULT 0,
    last_error text,
    claimed_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX attestation_queue_pending ON attestation_queue (id) WHERE status IN ('pending', 'failed');
CREATE UNIQUE INDEX attestation_queue_asset_op ON attestation_queue (asset_id, op);

CREATE TABLE attestations (
    seq        bigint PRIMARY KEY,
    queue_id   bigint NOT NULL UNIQUE REFERENCES attestation_queue,
    asset_id   uuid REFERENCES assets ON DELETE SET NULL,
    cid        text NOT NULL,
    tx_id      text NOT NULL UNIQUE,
    prev_tx    text NOT NULL,
    prev_cid   text NOT NULL,
    payload    bytea NOT NULL,
    signature  bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX attestations_asset ON attestations (asset_id);

CREATE TABLE chain_head (
    id            boolean PRIMARY KEY DEFAULT true CHECK (id),
    seq           bigint NOT NULL DEFAULT 0,
    tx_id         text NOT NULL DEFAULT '',
    cid           text NOT NULL DEFAULT '',
    last_batch    int NOT NULL DEFAULT 0,
    last_batch_ms double precision NOT NULL DEFAULT 0,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
INSERT INTO chain_head DEFAULT VALUES;
