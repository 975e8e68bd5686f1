package chain_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"

	"lightbox/chain"
	"lightbox/store"
)

// chainOf10 is a fixture whose chain holds 10 attestations.
func chainOf10(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.queue(t, 10)
	if res, err := f.flusher(&memLedger{}, 50).Drain(context.Background()); err != nil || res.Attested != 10 {
		t.Fatalf("drain = %+v, %v", res, err)
	}
	f.verifyOK(t, 10)
	return f
}

func (f *fixture) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := f.env.DB.ExecContext(context.Background(), query, args...); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyCatchesTampering(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(t *testing.T, f *fixture)
		seq    int64
		reason chain.Reason
	}{
		{"payload byte changed", func(t *testing.T, f *fixture) {
			// One digit of the byte size, so the payload stays valid JSON.
			f.exec(t, `UPDATE attestations SET payload = convert_to(replace(convert_from(payload, 'UTF8'), '"byte_size":1006', '"byte_size":9006'), 'UTF8') WHERE seq = 6`)
		}, 6, chain.ReasonBadSignature},
		{"signature changed", func(t *testing.T, f *fixture) {
			f.exec(t, `UPDATE attestations SET signature = set_byte(signature, 0, (get_byte(signature, 0) + 1) % 256) WHERE seq = 3`)
		}, 3, chain.ReasonBadSignature},
		{"tx_id changed", func(t *testing.T, f *fixture) {
			f.exec(t, `UPDATE attestations SET tx_id = repeat('0', 64) WHERE seq = 8`)
		}, 8, chain.ReasonTxIDMismatch},
		{"link column changed", func(t *testing.T, f *fixture) {
			f.exec(t, `UPDATE attestations SET prev_tx = repeat('a', 64) WHERE seq = 4`)
		}, 4, chain.ReasonPayloadMismatch},
		{"row removed", func(t *testing.T, f *fixture) {
			f.exec(t, `DELETE FROM attestations WHERE seq = 5`)
		}, 5, chain.ReasonMissing},
		{"head moved", func(t *testing.T, f *fixture) {
			f.exec(t, `UPDATE chain_head SET tx_id = (SELECT tx_id FROM attestations WHERE seq = 9)`)
		}, 10, chain.ReasonHeadMismatch},
		{"validly signed row linking elsewhere", func(t *testing.T, f *fixture) {
			// Someone with the key re-signs seq 7 to link to seq 5: every
			// check of the row alone passes, the link does not.
			forge(t, f, 7, 5)
		}, 7, chain.ReasonBrokenLink},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := chainOf10(t)
			c.tamper(t, f)
			res, err := chain.Verify(context.Background(), f.st, f.keys(), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK || res.FirstBroken == nil || res.FirstBroken.Seq != c.seq || res.FirstBroken.Reason != c.reason {
				t.Fatalf("verify = %+v (%+v), want broken at seq %d: %s", res, res.FirstBroken, c.seq, c.reason)
			}
			// Every row passed when only the head is wrong.
			want := c.seq - 1
			if c.reason == chain.ReasonHeadMismatch {
				want = 10
			}
			if res.Checked != want {
				t.Fatalf("checked %d rows, want %d", res.Checked, want)
			}
		})
	}
}

// forge re-signs row seq so that it links to row to.
func forge(t *testing.T, f *fixture, seq, to int64) {
	t.Helper()
	ctx := context.Background()
	row, err := f.st.AttestationBySeq(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	target, err := f.st.AttestationBySeq(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	p, err := chain.ParsePayload(row.Payload)
	if err != nil {
		t.Fatal(err)
	}
	p.Attestation.PrevTx, p.Attestation.PrevCID = target.TxID, target.CID
	tx, err := chain.Sign(f.key, p)
	if err != nil {
		t.Fatal(err)
	}
	f.exec(t, `UPDATE attestations SET payload = $2, signature = $3, tx_id = $4, prev_tx = $5, prev_cid = $6 WHERE seq = $1`,
		seq, tx.Payload, tx.Signature, tx.TxID, tx.PrevTx, tx.PrevCID)
}

func TestVerifyRanges(t *testing.T) {
	f := chainOf10(t)
	ctx := context.Background()
	for _, c := range []struct {
		from, to, checked int64
	}{{0, 0, 10}, {1, 10, 10}, {4, 7, 4}, {10, 0, 1}, {5, 99, 6}, {11, 0, 0}} {
		res, err := chain.Verify(ctx, f.st, f.keys(), c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK || res.Checked != c.checked {
			t.Fatalf("verify(%d, %d) = %+v, want ok with %d checked", c.from, c.to, res, c.checked)
		}
	}
	// A range starting after a tampered row still checks its first link.
	f.exec(t, `UPDATE attestations SET tx_id = repeat('0', 64) WHERE seq = 3`)
	res, err := chain.Verify(ctx, f.st, f.keys(), 4, 6)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.FirstBroken.Seq != 4 || res.FirstBroken.Reason != chain.ReasonBrokenLink {
		t.Fatalf("verify(4, 6) after changing seq 3's id = %+v, want a broken link at 4", res)
	}

	for _, bad := range [][2]int64{{-1, 0}, {0, -5}, {7, 3}} {
		_, err := chain.Verify(ctx, f.st, f.keys(), bad[0], bad[1])
		var ce *chain.Error
		if !errors.As(err, &ce) || ce.Code != chain.CodeInvalidRange {
			t.Fatalf("verify(%d, %d): %v, want invalid_range", bad[0], bad[1], err)
		}
	}
}

// Verify checks against the chain's own keys, not the one a row claims.
func TestVerifyUnderAnotherKeyFails(t *testing.T) {
	f := chainOf10(t)
	other := newFixture(t)
	res, err := chain.Verify(context.Background(), f.st, other.keys(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.FirstBroken.Seq != 1 || res.FirstBroken.Reason != chain.ReasonUnknownKey {
		t.Fatalf("verify under another key = %+v", res)
	}
}

func TestAttestationOfQueuedAndUnknownAssets(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ids := f.queue(t, 1)
	a, err := chain.AttestationOf(ctx, f.st, f.keys(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != store.AttestPending || a.Record != nil {
		t.Fatalf("a queued asset's attestation = %+v, want pending without a record", a)
	}
	if _, err := chain.AttestationOf(ctx, f.st, f.keys(), f.project); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("attestation of an unknown asset: %v, want not found", err)
	}
}

// After a rotation, rows name the key that signed them: the chain verifies
// with the old key retired, and not without it.
func TestVerifyAcrossAKeyRotation(t *testing.T) {
	f := chainOf10(t)
	ctx := context.Background()
	old := f.pub
	f.pub, f.key, _ = ed25519.GenerateKey(rand.Reader)
	f.queue(t, 5)
	if res, err := f.flusher(&memLedger{}, 50).Drain(ctx); err != nil || res.Attested != 5 {
		t.Fatalf("drain after the rotation = %+v, %v", res, err)
	}

	rows := f.chainRows(t)
	for _, r := range rows {
		want := old
		if r.Seq > 10 {
			want = f.pub
		}
		if r.PublicKey != hex.EncodeToString(want) {
			t.Fatalf("seq %d names key %q, want the one that signed it, %x", r.Seq, r.PublicKey, want)
		}
	}
	rotated, err := chain.NewKeys(f.pub, hex.EncodeToString(old))
	if err != nil {
		t.Fatal(err)
	}
	verify := func(keys chain.Keys) chain.VerifyResult {
		t.Helper()
		res, err := chain.Verify(ctx, f.st, keys, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := verify(rotated); !res.OK || res.Checked != 15 {
		t.Fatalf("verify with the old key retired = %+v (%+v), want ok with 15 checked", res, res.FirstBroken)
	}
	if res := verify(f.keys()); res.OK || res.FirstBroken.Seq != 1 || res.FirstBroken.Reason != chain.ReasonUnknownKey {
		t.Fatalf("verify without the old key = %+v (%+v), want broken at seq 1: unknown_key", res, res.FirstBroken)
	}
	for _, c := range []struct {
		seq  int64
		want ed25519.PublicKey
	}{{3, old}, {12, f.pub}} {
		a, err := chain.AttestationOf(ctx, f.st, rotated, *rows[c.seq-1].AssetID)
		if err != nil {
			t.Fatal(err)
		}
		if a.Record.PublicKey != hex.EncodeToString(c.want) || !ed25519.Verify(c.want, a.Record.Payload, a.Record.Signature) {
			t.Fatalf("seq %d's attestation shows key %s, want %x", c.seq, a.Record.PublicKey, c.want)
		}
	}

	// A row's key cannot be swapped for another the chain trusts.
	f.exec(t, `UPDATE attestations SET public_key = $1 WHERE seq = 12`, hex.EncodeToString(old))
	if res := verify(rotated); res.OK || res.FirstBroken.Seq != 12 || res.FirstBroken.Reason != chain.ReasonBadSignature {
		t.Fatalf("verify with seq 12 naming the old key = %+v (%+v), want broken at 12: bad_signature", res, res.FirstBroken)
	}
}

// Rows signed before rows named their key are checked under every key the
// chain knows.
func TestVerifyRowsThatNameNoKey(t *testing.T) {
	f := chainOf10(t)
	ctx := context.Background()
	f.exec(t, `UPDATE attestations SET public_key = NULL`)
	old := f.pub
	newPub, _, _ := ed25519.GenerateKey(rand.Reader)
	rotated, err := chain.NewKeys(newPub, hex.EncodeToString(old))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := chain.Verify(ctx, f.st, rotated, 0, 0); err != nil || !res.OK || res.Checked != 10 {
		t.Fatalf("verify with the signing key retired = %+v, %v; want ok with 10 checked", res, err)
	}
	res, err := chain.Verify(ctx, f.st, chain.Keys{Current: newPub}, 0, 0)
	if err != nil || res.OK || res.FirstBroken.Seq != 1 || res.FirstBroken.Reason != chain.ReasonBadSignature {
		t.Fatalf("verify without the signing key = %+v, %v; want broken at seq 1: bad_signature", res, err)
	}
	rows := f.chainRows(t)
	a, err := chain.AttestationOf(ctx, f.st, rotated, *rows[4].AssetID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Record.PublicKey != hex.EncodeToString(old) {
		t.Fatalf("an unnamed row's attestation shows key %s, want the retired one that verifies it, %x", a.Record.PublicKey, old)
	}
}

// A span's state names everything its verification reads: it stays while
// nothing changes, and changes with any row of the range or the one before
// it, with the head, and with the keys; rows after the range do not count.
func TestSpanStateChangesWithWhatVerifyReads(t *testing.T) {
	f := chainOf10(t)
	ctx := context.Background()
	state := func(keys chain.Keys, from, to int64) string {
		t.Helper()
		s, err := chain.SpanOf(ctx, f.st, keys, from, to)
		if err != nil {
			t.Fatal(err)
		}
		return s.State
	}
	before := state(f.keys(), 3, 6)
	if again := state(f.keys(), 3, 6); again != before {
		t.Fatal("the state changed while nothing did")
	}
	if state(f.keys(), 3, 7) == before || state(f.keys(), 4, 6) == before {
		t.Fatal("another range has the same state")
	}
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	if state(chain.Keys{Current: f.pub, Retired: []ed25519.PublicKey{other}}, 3, 6) == before {
		t.Fatal("another key set has the same state")
	}
	f.exec(t, `UPDATE attestations SET cid = 'ff' || substr(cid, 3) WHERE seq = 9`)
	if state(f.keys(), 3, 6) != before {
		t.Fatal("a row after the range changed the state")
	}
	f.exec(t, `UPDATE attestations SET signature = set_byte(signature, 0, (get_byte(signature, 0) + 1) % 256) WHERE seq = 2`)
	if state(f.keys(), 3, 6) == before {
		t.Fatal("the row the range links to changed, and the state did not")
	}
	before = state(f.keys(), 3, 6)
	f.exec(t, `UPDATE chain_head SET seq = seq + 1`)
	if state(f.keys(), 3, 6) == before {
		t.Fatal("the head moved, and the state did not")
	}

	// Past the head, a span holds nothing, and verifying it finds no fault.
	s, err := chain.SpanOf(ctx, f.st, f.keys(), 50, 60)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := chain.VerifySpan(ctx, f.st, f.keys(), s); err != nil || !res.OK || res.Checked != 0 {
		t.Fatalf("verify past the head: %+v, %v", res, err)
	}
}
