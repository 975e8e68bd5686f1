-- The public key (hex) each attestation was signed with, so the chain
-- verifies across a rotation of its key. Rows signed before this column
-- existed have none; they are checked under every key the chain knows.
ALTER TABLE attestations ADD COLUMN public_key text;
