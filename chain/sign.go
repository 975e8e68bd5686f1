package chain

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"

	"lightbox/store"
)

// Transaction is one signed link: what the ledger receives (as JSON, one
// object) and what the attestations table keeps.
type Transaction struct {
	TxID      string `json:"txId"`      // hex SHA-256 of Signature
	Seq       int64  `json:"seq"`       // position in the chain, from 1
	CID       string `json:"cid"`       // hex SHA-256 of the original
	PrevTx    string `json:"prevTx"`    // TxID of seq-1, Genesis for seq 1
	PrevCID   string `json:"prevCid"`   // CID of seq-1, Genesis for seq 1
	Payload   []byte `json:"payload"`   // the canonical bytes signed; standard padded base64 in JSON
	Signature []byte `json:"signature"` // Ed25519 over Payload; standard padded base64 in JSON
	PublicKey string `json:"publicKey"` // hex of the 32-byte Ed25519 public key
}

// TxID is the id of the transaction with signature sig.
func TxID(sig []byte) string {
	sum := sha256.Sum256(sig)
	return hex.EncodeToString(sum[:])
}

// Link is the point a new attestation attaches to: the head.
type Link struct {
	Seq  int64
	TxID string
	CID  string
}

// NewPayload is the payload attesting item as the link after prev.
func NewPayload(item store.ClaimedAttestation, prev Link) Payload {
	p := Payload{
		Attestation: Statement{
			PI: item.ProjectID.String(), Ver: PayloadVersion, CID: item.CID, Op: item.Op, Vis: item.Visibility,
			TS: FormatTime(item.TS), PrevTx: prev.TxID, PrevCID: prev.CID, Seq: prev.Seq + 1,
		},
		Manifest: Manifest{Filename: item.Filename, ByteSize: item.ByteSize, ContentType: item.ContentType},
	}
	if item.AssetID != nil {
		p.Manifest.AssetID = item.AssetID.String()
	}
	return p
}

// Sign encodes and signs p.
func Sign(key ed25519.PrivateKey, p Payload) (*Transaction, error) {
	body, err := p.Canonical()
	if err != nil {
		return nil, err
	}
	sig := ed25519.Sign(key, body)
	s := p.Attestation
	return &Transaction{
		TxID: TxID(sig), Seq: s.Seq, CID: s.CID, PrevTx: s.PrevTx, PrevCID: s.PrevCID,
		Payload: body, Signature: sig, PublicKey: hex.EncodeToString(key.Public().(ed25519.PublicKey)),
	}, nil
}

// Check verifies tx on its own under pub: the signature, the id, and that
// its fields say what its payload says. It answers a Reason and a sentence,
// or "" when tx is sound. Links to other transactions are Verify's job.
func Check(pub ed25519.PublicKey, tx *Transaction) (Reason, string) {
	if !ed25519.Verify(pub, tx.Payload, tx.Signature) {
		return ReasonBadSignature, "the signature does not verify under the key that signed it"
	}
	return checkSigned(tx)
}

// checkSigned is Check after the signature: the id, and that tx's fields
// say what its payload says.
func checkSigned(tx *Transaction) (Reason, string) {
	if TxID(tx.Signature) != tx.TxID {
		return ReasonTxIDMismatch, "tx_id is not the SHA-256 of the signature"
	}
	p, err := ParsePayload(tx.Payload)
	if err != nil {
		return ReasonBadPayload, err.Error()
	}
	s := p.Attestation
	switch {
	case s.Ver != PayloadVersion:
		return ReasonBadPayload, "unknown payload version"
	case s.Seq != tx.Seq, s.CID != tx.CID, s.PrevTx != tx.PrevTx, s.PrevCID != tx.PrevCID:
		return ReasonPayloadMismatch, "seq, cid, prev_tx or prev_cid differ from the signed payload"
	}
	return "", ""
}
