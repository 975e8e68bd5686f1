package chain_test

import (
	"context"
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
			res, err := chain.Verify(context.Background(), f.st, f.pub, 0, 0)
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
		res, err := chain.Verify(ctx, f.st, f.pub, c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK || res.Checked != c.checked {
			t.Fatalf("verify(%d, %d) = %+v, want ok with %d checked", c.from, c.to, res, c.checked)
		}
	}
	// A range starting after a tampered row still checks its first link.
	f.exec(t, `UPDATE attestations SET tx_id = repeat('0', 64) WHERE seq = 3`)
	res, err := chain.Verify(ctx, f.st, f.pub, 4, 6)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.FirstBroken.Seq != 4 || res.FirstBroken.Reason != chain.ReasonBrokenLink {
		t.Fatalf("verify(4, 6) after changing seq 3's id = %+v, want a broken link at 4", res)
	}

	for _, bad := range [][2]int64{{-1, 0}, {0, -5}, {7, 3}} {
		_, err := chain.Verify(ctx, f.st, f.pub, bad[0], bad[1])
		var ce *chain.Error
		if !errors.As(err, &ce) || ce.Code != chain.CodeInvalidRange {
			t.Fatalf("verify(%d, %d): %v, want invalid_range", bad[0], bad[1], err)
		}
	}
}

// Verify checks against the chain's own key, not the one a row claims.
func TestVerifyUnderAnotherKeyFails(t *testing.T) {
	f := chainOf10(t)
	other := newFixture(t)
	res, err := chain.Verify(context.Background(), f.st, other.pub, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.FirstBroken.Seq != 1 || res.FirstBroken.Reason != chain.ReasonBadSignature {
		t.Fatalf("verify under another key = %+v", res)
	}
}

func TestAttestationOfQueuedAndUnknownAssets(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ids := f.queue(t, 1)
	a, err := chain.AttestationOf(ctx, f.st, f.pub, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != store.AttestPending || a.Record != nil {
		t.Fatalf("a queued asset's attestation = %+v, want pending without a record", a)
	}
	if _, err := chain.AttestationOf(ctx, f.st, f.pub, f.project); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("attestation of an unknown asset: %v, want not found", err)
	}
}
