package chain

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
)

// Reason says why a link of the chain does not hold.
type Reason string

// Reasons Verify reports, stable for programs.
const (
	ReasonMissing         Reason = "missing"          // no row with this seq
	ReasonBadSignature    Reason = "bad_signature"    // the signature does not verify: payload or signature altered
	ReasonUnknownKey      Reason = "unknown_key"      // signed by a key that is not the chain's, current or retired
	ReasonTxIDMismatch    Reason = "tx_id_mismatch"   // tx_id is not the SHA-256 of the signature
	ReasonBadPayload      Reason = "bad_payload"      // the signed payload is not canonical version-1 JSON
	ReasonPayloadMismatch Reason = "payload_mismatch" // the row's seq, cid or links differ from its signed payload
	ReasonBrokenLink      Reason = "broken_link"      // prev_tx or prev_cid do not name the row before
	ReasonHeadMismatch    Reason = "head_mismatch"    // the head names another tx than the last row
)

// Broken locates the first link that does not hold.
type Broken struct {
	Seq     int64  `json:"seq"`
	Reason  Reason `json:"reason"`
	Message string `json:"message"`
}

// VerifyResult is the answer of Verify. Checked counts the rows that passed
// every check before the first broken one, if any.
type VerifyResult struct {
	OK          bool    `json:"ok"`
	Checked     int64   `json:"checked"`
	FirstBroken *Broken `json:"firstBroken,omitempty"`
}

// verifyPage is how many rows Verify reads at a time.
const verifyPage = 1000

// Verify checks the chain from seq from to seq to (0 means the first, and
// the head): each row's signature under the key of keys it names, its tx_id, its payload against
// its columns, seq continuity, and that each row links to the one before
// (seq 1 to Genesis). A range reaching the head also checks the head row.
// An impossible range is an Error with CodeInvalidRange.
func Verify(ctx context.Context, st *store.Store, keys Keys, from, to int64) (VerifyResult, error) {
	head, from, to, err := resolve(ctx, st, from, to)
	if err != nil {
		return VerifyResult{}, err
	}
	res := VerifyResult{OK: true}
	broke := func(seq int64, r Reason, msg string) (VerifyResult, error) {
		res.OK, res.FirstBroken = false, &Broken{Seq: seq, Reason: r, Message: msg}
		return res, nil
	}
	if from > to {
		return res, nil // nothing attested in the range yet
	}

	// The row before the range anchors its first link.
	prev := Link{TxID: Genesis, CID: Genesis}
	if from > 1 {
		r, err := st.AttestationBySeq(ctx, from-1)
		if errors.Is(err, store.ErrNotFound) {
			return broke(from, ReasonBrokenLink, fmt.Sprintf("seq %d, which it links to, is missing", from-1))
		}
		if err != nil {
			return res, err
		}
		prev = Link{Seq: r.Seq, TxID: r.TxID, CID: r.CID}
	}

	next := from
	for next <= to {
		rows, err := st.Attestations(ctx, next, to, verifyPage)
		if err != nil {
			return res, err
		}
		if len(rows) == 0 {
			return broke(next, ReasonMissing, "no attestation has this seq")
		}
		for _, r := range rows {
			if r.Seq != next {
				return broke(next, ReasonMissing, "no attestation has this seq")
			}
			pub, verified, reason, msg := keys.signer(&r)
			if reason != "" {
				return broke(r.Seq, reason, msg)
			}
			tx := &Transaction{TxID: r.TxID, Seq: r.Seq, CID: r.CID, PrevTx: r.PrevTx, PrevCID: r.PrevCID, Payload: r.Payload, Signature: r.Signature}
			if verified {
				reason, msg = checkSigned(tx)
			} else {
				reason, msg = Check(pub, tx)
			}
			if reason != "" {
				return broke(r.Seq, reason, msg)
			}
			if r.PrevTx != prev.TxID || r.PrevCID != prev.CID {
				return broke(r.Seq, ReasonBrokenLink, "prev_tx or prev_cid do not name the attestation before it")
			}
			prev = Link{Seq: r.Seq, TxID: r.TxID, CID: r.CID}
			res.Checked++
			next++
		}
	}
	if to == head.Seq && (head.TxID != prev.TxID || head.CID != prev.CID) {
		return broke(head.Seq, ReasonHeadMismatch, "the chain head names another transaction than the last attestation")
	}
	return res, nil
}

// Span is a range of the chain as it stands: its ends, To at most the
// head, and State, which names everything a verification of the range
// reads (its rows and the one before, the head, the keys). An outcome kept
// under State holds until the head moves or any of those rows changes, so
// a kept answer never hides a row altered in place.
type Span struct {
	From, To int64
	State    string
}

// SpanOf resolves from..to (0 for the first seq and the head) against the
// chain now. Reading it costs one indexed pass over the rows, far less
// than checking their signatures.
func SpanOf(ctx context.Context, st *store.Store, keys Keys, from, to int64) (Span, error) {
	head, from, to, err := resolve(ctx, st, from, to)
	if err != nil {
		return Span{}, err
	}
	n, digest, err := st.AttestationsDigest(ctx, from-1, to)
	if err != nil {
		return Span{}, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d-%d|head %d %s %s|rows %d %s|keys", from, to, head.Seq, head.TxID, head.CID, n, digest)
	for _, pub := range keys.all() {
		fmt.Fprintf(h, " %x", pub)
	}
	return Span{From: from, To: to, State: hex.EncodeToString(h.Sum(nil))}, nil
}

// VerifySpan is Verify of a resolved span; a span past the head holds
// nothing yet, which is no fault.
func VerifySpan(ctx context.Context, st *store.Store, keys Keys, s Span) (VerifyResult, error) {
	if s.From > s.To {
		return VerifyResult{OK: true}, nil
	}
	return Verify(ctx, st, keys, s.From, s.To)
}

// resolve refuses a range no chain has and reads the head to resolve
// from..to against it: 0 stands for the first seq or the head, and to is
// at most the head.
func resolve(ctx context.Context, st *store.Store, from, to int64) (head store.ChainHead, _, _ int64, err error) {
	if from < 0 || to < 0 || (to > 0 && from > to) {
		return head, 0, 0, errorf(CodeInvalidRange, "fromSeq and toSeq must be positive with fromSeq <= toSeq (got %d, %d)", from, to)
	}
	if head, err = st.ChainHead(ctx); err != nil {
		return head, 0, 0, err
	}
	if to == 0 || to > head.Seq {
		to = head.Seq
	}
	return head, max(from, 1), to, nil
}

// Head is the chain's last attestation, with the last batch's size and
// duration (how fast the chain moves, for /readyz).
type Head struct {
	Seq           int64     `json:"seq"`
	TxID          string    `json:"txId"`
	CID           string    `json:"cid,omitempty"` // only to the asset's owner and admins
	UpdatedAt     time.Time `json:"updatedAt"`
	LastBatchSize int       `json:"lastBatchSize"`
	LastBatchMs   float64   `json:"lastBatchMs"`
}

func headOf(h store.ChainHead) Head {
	return Head{Seq: h.Seq, TxID: h.TxID, CID: h.CID, UpdatedAt: h.UpdatedAt.UTC(), LastBatchSize: h.LastBatch, LastBatchMs: h.LastBatchMs}
}

// ReadHead reads the head.
func ReadHead(ctx context.Context, st *store.Store) (Head, error) {
	h, err := st.ChainHead(ctx)
	if err != nil {
		return Head{}, err
	}
	return headOf(h), nil
}

// QueueCounts is how many queue items are in each state.
type QueueCounts struct {
	Pending   int64 `json:"pending"`
	Signing   int64 `json:"signing"`
	Failed    int64 `json:"failed"`
	Abandoned int64 `json:"abandoned"`
	Attested  int64 `json:"attested"`
}

// CountQueue counts the attestation queue by state.
func CountQueue(ctx context.Context, st *store.Store) (QueueCounts, error) {
	m, err := st.AttestationQueueCounts(ctx)
	if err != nil {
		return QueueCounts{}, err
	}
	return QueueCounts{
		Pending: m[store.AttestPending], Signing: m[store.AttestSigning], Failed: m[store.AttestFailed],
		Abandoned: m[store.AttestAbandoned], Attested: m[store.AttestAttested],
	}, nil
}

// AssetAttestation is an asset's standing in the chain: its queue state and,
// once attested, the signed record that proves it.
type AssetAttestation struct {
	AssetID   uuid.UUID    `json:"assetId"`
	Status    string       `json:"status"` // pending, signing, attested, failed, abandoned
	Attempts  int          `json:"attempts"`
	LastError string       `json:"lastError,omitempty"`
	Record    *Attestation `json:"record,omitempty"`
}

// Attestation is one signed record, everything needed to check it offline:
// verify Signature over Payload with PublicKey, and that TxID is the
// SHA-256 of Signature.
type Attestation struct {
	Seq       int64     `json:"seq"`
	TxID      string    `json:"txId"`
	CID       string    `json:"cid"`
	PrevTx    string    `json:"prevTx"`
	PrevCID   string    `json:"prevCid,omitempty"` // only when the previous entry is the caller's
	CreatedAt time.Time `json:"createdAt"`
	// Payload is the exact signed bytes, standard padded base64; it names
	// PrevCID, so it is left out with it.
	Payload []byte `json:"payload,omitempty"`
	// Statement is the same payload decoded, for reading.
	Statement Payload `json:"statement"`
	// Signature is Ed25519 over Payload, standard padded base64.
	Signature []byte `json:"signature"`
	Algorithm string `json:"algorithm"` // "Ed25519"
	PublicKey string `json:"publicKey"` // hex of the 32-byte key that signed it
}

// AttestationOf finds asset's ingest attestation; store.ErrNotFound when
// the asset was never queued. The caller checks the asset is the user's.
func AttestationOf(ctx context.Context, st *store.Store, keys Keys, asset uuid.UUID) (*AssetAttestation, error) {
	q, err := st.AssetAttestation(ctx, asset, "ingest")
	if err != nil {
		return nil, err
	}
	out := &AssetAttestation{AssetID: q.AssetID, Status: q.Status, Attempts: q.Attempts}
	if q.LastError != nil && q.Status != store.AttestAttested {
		out.LastError = *q.LastError
	}
	if r := q.Record; r != nil {
		signer := r.PublicKey
		if signer == "" {
			// Signed before rows named their key: the known key it verifies
			// under, or the current one, and Verify says it is broken.
			pub, _, _, _ := keys.signer(r)
			if pub == nil {
				pub = keys.Current
			}
			signer = hex.EncodeToString(pub)
		}
		a := &Attestation{
			Seq: r.Seq, TxID: r.TxID, CID: r.CID, PrevTx: r.PrevTx, PrevCID: r.PrevCID, CreatedAt: r.CreatedAt.UTC(),
			Payload: r.Payload, Signature: r.Signature, Algorithm: "Ed25519", PublicKey: signer,
		}
		// A stored payload always parses; if it was tampered with, show
		// what is there and let Verify say so.
		if err := json.Unmarshal(r.Payload, &a.Statement); err != nil {
			return nil, fmt.Errorf("attestation seq %d: %w", r.Seq, err)
		}
		out.Record = a
	}
	return out, nil
}

// RequeueAbandoned queues abandoned items again (only assets' when given)
// for the next flush, which the caller starts. It reports how many.
func RequeueAbandoned(ctx context.Context, st *store.Store, assets []uuid.UUID) (int64, error) {
	return st.RequeueAbandonedAttestations(ctx, assets)
}
