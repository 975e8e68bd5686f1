package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/internal/testenv"
	"lightbox/store"
)

// chainAsset records a user, a project and one finalized asset.
func chainAsset(t *testing.T, env *testenv.Env, cid string) (project, asset uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	user, project, asset := uuid.New(), uuid.New(), uuid.New()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO users (id, email) VALUES ($1, $2)`, []any{user, user.String() + "@example.com"}},
		{`INSERT INTO projects (id, owner_user_id, title) VALUES ($1, $2, 'p')`, []any{project, user}},
		{`INSERT INTO assets (id, project_id, filename, content_type, byte_size, upload_size, blob_key, checksum_sha256, status)
			VALUES ($1, $2, 'a.jpg', 'image/jpeg', 10, 12, 'k', $3, 'uploaded')`, []any{asset, project, cid}},
	} {
		if _, err := env.DB.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	return project, asset
}

func TestQueueAttestationOncePerAssetAndOp(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	cid := strings.Repeat("ab", 32)
	project, asset := chainAsset(t, env, cid)
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
	project, asset := chainAsset(t, env, strings.Repeat("0", 64))
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
	project, asset := chainAsset(t, env, cid)
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
