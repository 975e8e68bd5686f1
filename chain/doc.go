// Package chain provides Lightbox's attestation chain: every finalized
// original gets a signed, ordered record that proves its bytes (by SHA-256)
// existed, unaltered, at a point in the sequence.
//
// # How it works
//
// Finalize queues an item per new original (store.QueueAttestation). A
// Flusher takes the lock on the single chain_head row, claims up to
// BatchSize items in queue order, signs them one after another with Ed25519,
// each naming the previous one's tx_id and cid, publishes them to a Ledger
// in parallel, and then, in the transaction that still holds the head lock,
// keeps the longest prefix that published: its attestation rows and the new
// head commit together. The item that failed first counts an attempt
// (abandoned at MaxAttempts); the items after it go back to pending and are
// signed again, against the new head, by the next flush.
//
// Payloads are canonical JSON (see Canonicalize and Payload); tx_id is the
// hex SHA-256 of the signature; the first attestation has seq 1 and
// prev_tx = prev_cid = "" (Genesis).
//
// # Crashes
//
// The chain is what the attestations table says; the ledger is a witness.
// Claiming commits on its own (items show as signing) while the head lock
// is held by a separate, still open transaction. If the process dies after
// signing or after publishing some items, that transaction rolls back: no
// row, head unchanged, so Postgres never holds a fork. The items stay in
// signing until ReleaseStale (the sweeper, after StaleAfter) returns them to
// pending, and they are signed again with new tx_ids. What the dead flusher
// had already published stays in the ledger as orphans: ledger entries whose
// tx_id is in no attestation row. They are harmless: Verify walks the
// table, and a reader of the ledger keeps only entries whose tx_id the
// chain holds. The file ledger accepts the re-signed transactions like any
// others; an HTTP ledger must too (their tx_ids differ).
//
// A cancelled context (shutdown, task timeout) is not a crash: in-flight
// publishes finish or fail, and the published prefix is still committed.
package chain

import "fmt"

// Error is a refusal with a stable snake_case code, for bad input or
// configuration rather than a failing dependency.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Error codes.
const (
	CodeInvalidKey    = "invalid_key"
	CodeInvalidRange  = "invalid_range"
	CodeInvalidLedger = "invalid_ledger"
)

func errorf(code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
