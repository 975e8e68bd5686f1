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
// (abandoned at MaxAttempts) unless the ledger was down as a whole
// (ErrLedgerDown): an outage charges nobody and the flusher backs off. The
// items after it go back to pending and are signed again, against the new
// head, by the next flush. An admin can queue abandoned items again
// (RequeueAbandoned).
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
// signing, after publishing some items or before the commit, that
// transaction rolls back: no row, head unchanged, so Postgres never holds a
// fork (and the seq primary key and a compare-and-set on the head refuse
// one regardless). The items stay in signing until ReleaseStale (the
// sweeper, after StaleAfter) returns them to pending, and the next flush
// signs them again after whatever the head is then.
//
// Signed again in the same place, an item comes out identical (Ed25519 is
// deterministic), so the ledger sees the same tx_id twice. Signed in
// another place (other items were attested meanwhile, or one before it was
// abandoned), it gets a new tx_id, and what the dead flusher published is
// an orphan: a ledger entry whose tx_id no attestation row holds. Orphans
// and repeats are harmless: Verify walks the table, and a reader of the
// ledger keeps one entry per tx_id and only those the chain holds. The
// file ledger simply appends them; an HTTP ledger must accept a new tx_id
// for a seq it has seen, and a repeated tx_id as the same entry.
//
// A cancelled context (shutdown, task timeout) is not a crash: in-flight
// publishes finish or fail, and the published prefix is still committed.
//
// # Batch size and ledgers
//
// Attestation chain: the design says batches of up to 50; with a 50 ms ledger
// that caps the chain at 60,000 a minute, so the defaults are
// CHAIN_BATCH_SIZE=512 and CHAIN_CONCURRENCY=256. The local ledger is an
// fsynced JSON-lines file under DATA_DIR (a ledger in the database it
// witnesses would prove nothing); CHAIN_LEDGER_URL posts each signed
// transaction to an HTTP log instead. A ledger that is down (connection
// errors, 5xx, 429, file errors) is an outage: no item is charged a failure
// and flushing backs off from 5 s to 2 min; only a refusal of one item (a 4xx)
// counts towards abandoning it after 5.
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
