package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// Attestation queue states. An item moves pending → signing → attested; a
// failed publish leaves it failed (claimable again) or, at the last allowed
// attempt, abandoned (kept for inspection, never claimed again).
const (
	AttestPending   = "pending"
	AttestSigning   = "signing"
	AttestAttested  = "attested"
	AttestFailed    = "failed"
	AttestAbandoned = "abandoned"
)

// ErrBadAttestation is returned for a queue item that cannot be attested.
var ErrBadAttestation = errors.New("bad attestation item")

var hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// AttestationItem is one original waiting for the chain.
type AttestationItem struct {
	AssetID    uuid.UUID
	ProjectID  uuid.UUID
	CID        string    // lowercase hex SHA-256 of the original's bytes
	Op         string    // "ingest" when empty
	Visibility string    // "private" when empty
	TS         time.Time // when it happened; now when zero
}

// QueueAttestation puts item in line for the chain. A second call for the
// same asset and op does nothing and reports false.
func (s *Store) QueueAttestation(ctx context.Context, item AttestationItem) (bool, error) {
	if !hexSHA256.MatchString(item.CID) {
		return false, fmt.Errorf("%w: cid must be 64 lowercase hex digits", ErrBadAttestation)
	}
	if item.Op == "" {
		item.Op = "ingest"
	}
	if item.Visibility == "" {
		item.Visibility = "private"
	}
	var ts *time.Time
	if !item.TS.IsZero() {
		ts = &item.TS
	}
	res, err := s.db.ExecContext(ctx, `
		INSERT INTO attestation_queue (asset_id, project_id, cid, op, visibility, ts)
		VALUES ($1, $2, $3, $4, $5, coalesce($6, now()))
		ON CONFLICT (asset_id, op) DO NOTHING`,
		item.AssetID, item.ProjectID, item.CID, item.Op, item.Visibility, ts)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ChainHead is the single row naming the chain's last attestation.
type ChainHead struct {
	Seq         int64     `db:"seq"`
	TxID        string    `db:"tx_id"`
	CID         string    `db:"cid"`
	LastBatch   int       `db:"last_batch"`
	LastBatchMs float64   `db:"last_batch_ms"`
	UpdatedAt   time.Time `db:"updated_at"`
}

const headColumns = `seq, tx_id, cid, last_batch, last_batch_ms, updated_at`

// ChainHead reads the head without locking it.
func (s *Store) ChainHead(ctx context.Context) (ChainHead, error) {
	var h ChainHead
	err := s.db.GetContext(ctx, &h, `SELECT `+headColumns+` FROM chain_head`)
	return h, notFound(err)
}

// LockChainHead reads the head and locks its row until the transaction of s
// ends (call it inside WithTx). Holding this lock is what makes one flusher
// at a time the only signer: every flusher takes it before claiming, and
// moves the head in the same transaction.
func (s *Store) LockChainHead(ctx context.Context) (ChainHead, error) {
	var h ChainHead
	err := s.db.GetContext(ctx, &h, `SELECT `+headColumns+` FROM chain_head FOR UPDATE`)
	return h, notFound(err)
}

// ClaimedAttestation is a queue item taken for signing, with what the
// manifest says of its asset (empty when the asset is gone).
type ClaimedAttestation struct {
	ID          int64      `db:"id"`
	AssetID     *uuid.UUID `db:"asset_id"`
	ProjectID   uuid.UUID  `db:"project_id"`
	CID         string     `db:"cid"`
	Op          string     `db:"op"`
	Visibility  string     `db:"visibility"`
	TS          time.Time  `db:"ts"`
	Attempts    int        `db:"attempts"`
	Filename    string     `db:"filename"`
	ContentType string     `db:"content_type"`
	ByteSize    int64      `db:"byte_size"`
}

// ClaimAttestations marks up to limit claimable items as signing, oldest
// first, and commits that at once, so a crash leaves them visibly stuck
// (ReleaseStaleAttestations frees them) instead of silently lost. Call it
// only while holding LockChainHead, on a Store outside that transaction.
func (s *Store) ClaimAttestations(ctx context.Context, limit int) ([]ClaimedAttestation, error) {
	var items []ClaimedAttestation
	err := s.db.SelectContext(ctx, &items, `
		WITH claimed AS (
			UPDATE attestation_queue SET status = 'signing', claimed_at = now()
			WHERE id IN (SELECT id FROM attestation_queue WHERE status IN ('pending', 'failed')
				ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
			RETURNING id, asset_id, project_id, cid, op, visibility, ts, attempts)
		SELECT c.id, c.asset_id, c.project_id, c.cid, c.op, c.visibility, c.ts, c.attempts,
			coalesce(a.filename, '') AS filename, coalesce(a.content_type, '') AS content_type,
			coalesce(a.upload_size, a.byte_size, 0) AS byte_size
		FROM claimed c LEFT JOIN assets a ON a.id = c.asset_id
		ORDER BY c.id`, limit)
	return items, err
}

// AttestationRecord is one link of the chain as stored.
type AttestationRecord struct {
	Seq       int64      `db:"seq"`
	QueueID   int64      `db:"queue_id"`
	AssetID   *uuid.UUID `db:"asset_id"`
	CID       string     `db:"cid"`
	TxID      string     `db:"tx_id"`
	PrevTx    string     `db:"prev_tx"`
	PrevCID   string     `db:"prev_cid"`
	Payload   []byte     `db:"payload"`
	Signature []byte     `db:"signature"`
	PublicKey string     `db:"public_key"` // hex; empty for rows signed before keys were recorded
	CreatedAt time.Time  `db:"created_at"`
}

const attestationColumns = `seq, queue_id, asset_id, cid, tx_id, prev_tx, prev_cid, payload, signature,
	coalesce(public_key, '') AS public_key, created_at`

// Requeue is a claimed item going back to the queue, with the error that
// sends it back (empty keeps the previous one).
type Requeue struct {
	QueueID int64
	Err     string
}

// ChainCommit is the outcome of one flush: the published prefix, the item
// that failed first, and the items after it that were signed against a
// prefix that no longer holds.
type ChainCommit struct {
	PrevSeq     int64               // the head seq the batch was signed on
	Attested    []AttestationRecord // in seq order, linking from the head
	Failed      *Requeue            // counts an attempt; nil when none failed or the failure was not the item's
	Requeued    []Requeue           // back to pending, attempts unchanged
	MaxAttempts int                 // a failure reaching this many attempts abandons the item
	BatchMs     float64             // how long the flush took, for the head's statistics
}

// ErrHeadMoved means the head is not where the batch was signed, which the
// head lock should make impossible; committing would fork the chain.
var ErrHeadMoved = errors.New("chain head moved while the batch was signed")

// CommitChainBatch records c in the transaction holding LockChainHead:
// the attestation rows, the new head, and every claimed item's new state.
// It reports whether the failed item was abandoned.
func (s *Store) CommitChainBatch(ctx context.Context, c ChainCommit) (abandoned bool, err error) {
	if n := len(c.Attested); n > 0 {
		seqs, queue, cids, txs, prevTx, prevCID := make([]int64, n), make([]int64, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		assets := make([]sql.NullString, n)
		payloads, sigs, keys := make([][]byte, n), make([][]byte, n), make([]string, n)
		for i, a := range c.Attested {
			seqs[i], queue[i], cids[i], txs[i], prevTx[i], prevCID[i] = a.Seq, a.QueueID, a.CID, a.TxID, a.PrevTx, a.PrevCID
			if a.AssetID != nil {
				assets[i] = sql.NullString{String: a.AssetID.String(), Valid: true}
			}
			payloads[i], sigs[i], keys[i] = a.Payload, a.Signature, a.PublicKey
		}
		// The seq primary key is the last guard against a fork: two batches
		// signed on one head cannot both insert.
		if _, err := s.db.ExecContext(ctx, `
			INSERT INTO attestations (seq, queue_id, asset_id, cid, tx_id, prev_tx, prev_cid, payload, signature, public_key)
			SELECT s, q, a, c, t, pt, pc, p, sig, nullif(k, '')
			FROM unnest($1::bigint[], $2::bigint[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bytea[], $9::bytea[], $10::text[])
				AS u(s, q, a, c, t, pt, pc, p, sig, k)`,
			pq.Array(seqs), pq.Array(queue), pq.Array(assets), pq.Array(cids), pq.Array(txs), pq.Array(prevTx), pq.Array(prevCID),
			pq.ByteaArray(payloads), pq.ByteaArray(sigs), pq.Array(keys)); err != nil {
			return false, fmt.Errorf("insert attestations: %w", err)
		}
		if _, err := s.db.ExecContext(ctx, `
			UPDATE attestation_queue SET status = 'attested', claimed_at = NULL, last_error = NULL
			WHERE id = ANY($1)`, pq.Array(queue)); err != nil {
			return false, err
		}
		last := c.Attested[n-1]
		res, err := s.db.ExecContext(ctx, `
			UPDATE chain_head SET seq = $1, tx_id = $2, cid = $3, last_batch = $4, last_batch_ms = $5, updated_at = now()
			WHERE seq = $6`, last.Seq, last.TxID, last.CID, n, c.BatchMs, c.PrevSeq)
		if err != nil {
			return false, err
		}
		if moved, _ := res.RowsAffected(); moved != 1 {
			return false, ErrHeadMoved
		}
	}
	if c.Failed != nil {
		if err := s.db.GetContext(ctx, &abandoned, `
			UPDATE attestation_queue SET attempts = attempts + 1, last_error = $2, claimed_at = NULL,
				status = CASE WHEN attempts + 1 >= $3 THEN 'abandoned' ELSE 'failed' END
			WHERE id = $1 RETURNING status = 'abandoned'`, c.Failed.QueueID, c.Failed.Err, c.MaxAttempts); err != nil {
			return false, err
		}
	}
	if len(c.Requeued) > 0 {
		ids, errs := make([]int64, len(c.Requeued)), make([]sql.NullString, len(c.Requeued))
		for i, r := range c.Requeued {
			ids[i] = r.QueueID
			errs[i] = sql.NullString{String: r.Err, Valid: r.Err != ""}
		}
		if _, err := s.db.ExecContext(ctx, `
			UPDATE attestation_queue q SET status = 'pending', claimed_at = NULL, last_error = coalesce(r.err, q.last_error)
			FROM unnest($1::bigint[], $2::text[]) AS r(id, err) WHERE q.id = r.id`,
			pq.Array(ids), pq.Array(errs)); err != nil {
			return false, err
		}
	}
	return abandoned, nil
}

// UnclaimAttestations returns items still marked signing to pending, for a
// flusher whose commit failed. Items whose commit did land are attested and
// stay so.
func (s *Store) UnclaimAttestations(ctx context.Context, ids []int64) error {
	_, err := s.db.ExecContext(ctx, `
		UPDATE attestation_queue SET status = 'pending', claimed_at = NULL
		WHERE id = ANY($1) AND status = 'signing'`, pq.Array(ids))
	return err
}

// ReleaseStaleAttestations returns items claimed for signing more than
// olderThan ago to pending: their flusher died. A crash is not the item's
// fault, so no attempt is counted.
func (s *Store) ReleaseStaleAttestations(ctx context.Context, olderThan time.Duration) (int64, error) {
	res, err := s.db.ExecContext(ctx, `
		UPDATE attestation_queue SET status = 'pending', claimed_at = NULL,
			last_error = 'released: its flusher stopped before finishing'
		WHERE status = 'signing' AND claimed_at <= now() - $1 * interval '1 microsecond'`, olderThan.Microseconds())
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// HasClaimableAttestations reports whether a flush would find work.
func (s *Store) HasClaimableAttestations(ctx context.Context) (bool, error) {
	var ok bool
	err := s.db.GetContext(ctx, &ok, `SELECT EXISTS (SELECT 1 FROM attestation_queue WHERE status IN ('pending', 'failed'))`)
	return ok, err
}

// AttestationQueueCounts counts queue items by state; every state is present.
// The queue keeps every item ever attested, so that state is read from
// the chain's length (one row per attested item) and the others through a
// partial index: a scrape costs the same with a million photos as with ten.
func (s *Store) AttestationQueueCounts(ctx context.Context) (map[string]int64, error) {
	rows := []struct {
		Status string `db:"status"`
		N      int64  `db:"n"`
	}{}
	if err := s.db.SelectContext(ctx, &rows, `
		SELECT status, count(*) AS n FROM attestation_queue WHERE status <> 'attested' GROUP BY status
		UNION ALL SELECT 'attested', seq FROM chain_head`); err != nil {
		return nil, err
	}
	out := map[string]int64{AttestPending: 0, AttestSigning: 0, AttestAttested: 0, AttestFailed: 0, AttestAbandoned: 0}
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// Attestations lists the chain's rows with from <= seq <= to, at most limit
// of them, in seq order.
func (s *Store) Attestations(ctx context.Context, from, to int64, limit int) ([]AttestationRecord, error) {
	var rows []AttestationRecord
	err := s.db.SelectContext(ctx, &rows, `SELECT `+attestationColumns+` FROM attestations
		WHERE seq BETWEEN $1 AND $2 ORDER BY seq LIMIT $3`, from, to, limit)
	return rows, err
}

// AttestationsDigest is how many rows have from <= seq <= to and a SHA-256
// (hex) of every column a verification reads of them, in seq order: it
// changes when any of those rows does.
func (s *Store) AttestationsDigest(ctx context.Context, from, to int64) (n int64, digest string, err error) {
	var out struct {
		N      int64  `db:"n"`
		Digest string `db:"digest"`
	}
	err = s.db.GetContext(ctx, &out, `
		SELECT count(*) AS n, coalesce(encode(sha256(convert_to(string_agg(
			concat_ws('|', seq, cid, tx_id, prev_tx, prev_cid, payload, signature, coalesce(public_key, '')), E'\n' ORDER BY seq
		), 'UTF8')), 'hex'), '') AS digest
		FROM attestations WHERE seq BETWEEN $1 AND $2`, from, to)
	return out.N, out.Digest, err
}

// AttestationBySeq reads one row of the chain.
func (s *Store) AttestationBySeq(ctx context.Context, seq int64) (*AttestationRecord, error) {
	var r AttestationRecord
	if err := s.db.GetContext(ctx, &r, `SELECT `+attestationColumns+` FROM attestations WHERE seq = $1`, seq); err != nil {
		return nil, notFound(err)
	}
	return &r, nil
}

// QueuedAttestation is an asset's place in the attestation queue, with its
// chain row once it has one.
type QueuedAttestation struct {
	QueueID   int64              `db:"id"`
	AssetID   uuid.UUID          `db:"asset_id"`
	Op        string             `db:"op"`
	Status    string             `db:"status"`
	Attempts  int                `db:"attempts"`
	LastError *string            `db:"last_error"`
	Record    *AttestationRecord `db:"-"`
}

// AssetAttestation finds asset's attestation for op (ErrNotFound when it was
// never queued).
func (s *Store) AssetAttestation(ctx context.Context, asset uuid.UUID, op string) (*QueuedAttestation, error) {
	var q QueuedAttestation
	if err := s.db.GetContext(ctx, &q, `SELECT id, asset_id, op, status, attempts, last_error
		FROM attestation_queue WHERE asset_id = $1 AND op = $2`, asset, op); err != nil {
		return nil, notFound(err)
	}
	var r AttestationRecord
	err := s.db.GetContext(ctx, &r, `SELECT `+attestationColumns+` FROM attestations WHERE queue_id = $1`, q.QueueID)
	switch {
	case err == nil:
		q.Record = &r
	case !errors.Is(err, sql.ErrNoRows):
		return nil, err
	}
	return &q, nil
}

// RequeueAbandonedAttestations puts abandoned items back to pending with
// their attempts reset, the last error kept for the record: an admin's
// decision that what failed them is fixed. With assets it takes only
// those assets' items, else every abandoned one. It returns how many.
func (s *Store) RequeueAbandonedAttestations(ctx context.Context, assets []uuid.UUID) (int64, error) {
	res, err := s.db.ExecContext(ctx, `
		UPDATE attestation_queue SET status = 'pending', attempts = 0, claimed_at = NULL
		WHERE status = 'abandoned' AND (coalesce(cardinality($1::uuid[]), 0) = 0 OR asset_id = ANY($1))`, pq.Array(assets))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
