package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// chainAsset records a project with one uploaded asset of 12 bytes.
func chainAsset(t *testing.T, env *testenv.Env) (project, asset uuid.UUID) {
	t.Helper()
	_, project = env.Project(t)
	return project, env.Upload(t, project, testenv.Upload{Data: make([]byte, 12)})[0]
}

func TestQueueAttestationOncePerAssetAndOp(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	cid := strings.Repeat("ab", 32)
	project, asset := chainAsset(t, env)
	ts := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

	// Inside a caller's transaction, as finalize does it.
	err := env.Store.WithTx(ctx, func(tx *store.Store) error {
		added, err := tx.QueueAttestation(ctx, store.AttestationItem{AssetID: asset, ProjectID: project, CID: cid, TS: ts})
		if err == nil && !added {
			t.Error("first QueueAttestation added nothing")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	added, err := env.Store.QueueAttestation(ctx, store.AttestationItem{AssetID: asset, ProjectID: project, CID: cid})
	if err != nil || added {
		t.Fatalf("second QueueAttestation = %v, %v; want nothing added", added, err)
	}
	counts, err := env.Store.AttestationQueueCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts[store.AttestPending] != 1 || counts[store.AttestAbandoned] != 0 {
		t.Fatalf("counts = %v, want one pending", counts)
	}

	items, err := env.Store.ClaimAttestations(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 {
		t.Fatalf("claimed %d items, want 1", len(items))
	}
	it := items[0]
	if it.Op != "ingest" || it.Visibility != "private" || !it.TS.Equal(ts) || it.Filename != "a.jpg" || it.ByteSize != 12 || *it.AssetID != asset {
		t.Fatalf("claimed %+v", it)
	}
	if more, _ := env.Store.HasClaimableAttestations(ctx); more {
		t.Fatal("a claimed item is still claimable")
	}
}

func TestQueueAttestationRejectsBadCID(t *testing.T) {
	env := testenv.New(t)
	project, asset := chainAsset(t, env)
	for _, cid := range []string{"", "abc", strings.Repeat("AB", 32), strings.Repeat("g", 64)} {
		_, err := env.Store.QueueAttestation(context.Background(), store.AttestationItem{AssetID: asset, ProjectID: project, CID: cid})
		if !errors.Is(err, store.ErrBadAttestation) {
			t.Errorf("cid %q: %v, want ErrBadAttestation", cid, err)
		}
	}
}

// A batch signed on a head that has since moved cannot commit.
func TestCommitChainBatchRefusesAMovedHead(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	cid := strings.Repeat("cd", 32)
	project, asset := chainAsset(t, env)
	if _, err := env.Store.QueueAttestation(ctx, store.AttestationItem{AssetID: asset, ProjectID: project, CID: cid}); err != nil {
		t.Fatal(err)
	}
	items, err := env.Store.ClaimAttestations(ctx, 1)
	if err != nil || len(items) != 1 {
		t.Fatal(items, err)
	}
	err = env.Store.WithTx(ctx, func(tx *store.Store) error {
		_, err := tx.CommitChainBatch(ctx, store.ChainCommit{
			PrevSeq: 7, MaxAttempts: 5,
			Attested: []store.AttestationRecord{{Seq: 8, QueueID: items[0].ID, CID: cid, TxID: strings.Repeat("1", 64), Payload: []byte("{}"), Signature: []byte{1}}},
		})
		return err
	})
	if !errors.Is(err, store.ErrHeadMoved) {
		t.Fatalf("commit on a stale head: %v, want ErrHeadMoved", err)
	}
	if n, _ := env.Store.Attestations(ctx, 0, 100, 10); len(n) != 0 {
		t.Fatal("the refused batch left attestation rows")
	}
}

// commitOn commits c on the head, as a flusher does while holding its lock.
func commitOn(t *testing.T, env *testenv.Env, c func(h store.ChainHead) store.ChainCommit) bool {
	t.Helper()
	ctx := context.Background()
	var abandoned bool
	err := env.Store.WithTx(ctx, func(tx *store.Store) error {
		h, err := tx.LockChainHead(ctx)
		if err != nil {
			return err
		}
		abandoned, err = tx.CommitChainBatch(ctx, c(h))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return abandoned
}

func TestChainClaimCommitAndUnclaim(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	res := env.Finalize(t, owner, project, testenv.Files(4)...)
	items, err := env.Store.ClaimAttestations(ctx, 10)
	if err != nil || len(items) != 4 {
		t.Fatalf("claimed %d, %v", len(items), err)
	}
	if again, _ := env.Store.ClaimAttestations(ctx, 10); len(again) != 0 {
		t.Fatalf("claimed %d items twice", len(again))
	}

	// The first is attested, the second fails, the rest go back unchanged.
	abandoned := commitOn(t, env, func(h store.ChainHead) store.ChainCommit {
		return store.ChainCommit{PrevSeq: h.Seq, MaxAttempts: 2, BatchMs: 3,
			Attested: []store.AttestationRecord{{Seq: h.Seq + 1, QueueID: items[0].ID, AssetID: items[0].AssetID, CID: items[0].CID,
				TxID: strings.Repeat("1", 64), PrevTx: h.TxID, PrevCID: h.CID, Payload: []byte("{}"), Signature: []byte{1}}},
			Failed:   &store.Requeue{QueueID: items[1].ID, Err: "ledger said no"},
			Requeued: []store.Requeue{{QueueID: items[2].ID}, {QueueID: items[3].ID, Err: "not tried"}},
		}
	})
	if abandoned {
		t.Fatal("a first failure abandoned its item")
	}
	h, err := env.Store.ChainHead(ctx)
	if err != nil || h.Seq != 1 || h.TxID != strings.Repeat("1", 64) || h.LastBatch != 1 {
		t.Fatalf("head %+v %v", h, err)
	}
	q, err := env.Store.AssetAttestation(ctx, res.Assets[0].AssetID, "ingest")
	if err != nil || q.Status != store.AttestAttested || q.Record == nil || q.Record.Seq != 1 {
		t.Fatalf("attested item %+v %v", q, err)
	}
	counts, _ := env.Store.AttestationQueueCounts(ctx)
	if counts[store.AttestAttested] != 1 || counts[store.AttestFailed] != 1 || counts[store.AttestPending] != 2 || counts[store.AttestSigning] != 0 {
		t.Fatalf("counts %v", counts)
	}

	// The failed item fails once more and is abandoned at MaxAttempts.
	var failed int64
	claimed, _ := env.Store.ClaimAttestations(ctx, 10)
	for _, it := range claimed {
		if it.ID == items[1].ID {
			failed = it.ID
		}
	}
	if len(claimed) != 3 || failed == 0 {
		t.Fatalf("second claim %+v", claimed)
	}
	abandoned = commitOn(t, env, func(h store.ChainHead) store.ChainCommit {
		return store.ChainCommit{PrevSeq: h.Seq, MaxAttempts: 2, Failed: &store.Requeue{QueueID: failed, Err: "still no"}}
	})
	if !abandoned {
		t.Fatal("the second failure of two allowed did not abandon the item")
	}

	// A flusher whose commit failed gives its claim back at once; a dead
	// one's claim is released once stale.
	var rest []int64
	for _, it := range claimed {
		if it.ID != failed {
			rest = append(rest, it.ID)
		}
	}
	if err := env.Store.UnclaimAttestations(ctx, rest[:1]); err != nil {
		t.Fatal(err)
	}
	if n, err := env.Store.ReleaseStaleAttestations(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("released %d fresh claims, %v", n, err)
	}
	if n, err := env.Store.ReleaseStaleAttestations(ctx, 0); err != nil || n != 1 {
		t.Fatalf("released %d stale claims, want 1 (%v)", n, err)
	}
	counts, _ = env.Store.AttestationQueueCounts(ctx)
	if counts[store.AttestPending] != 2 || counts[store.AttestAbandoned] != 1 || counts[store.AttestSigning] != 0 {
		t.Fatalf("counts %v", counts)
	}
	if more, _ := env.Store.HasClaimableAttestations(ctx); !more {
		t.Fatal("pending items are not claimable")
	}
}
