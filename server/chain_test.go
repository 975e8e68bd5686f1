package server_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"lightbox/chain"
	"lightbox/internal/testenv"
)

func TestChainEndpoints(t *testing.T) {
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	r, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg", "photos/storm.jpg"))
	expect(t, r, 200, "")

	r = a.do("GET", "/v1/assets/"+ups[0].AssetID+"/attestation", key, nil)
	expect(t, r, 200, "")
	if st := r.json(t)["status"]; st != "pending" {
		t.Fatalf("attestation before a flush: %v", st)
	}

	a.attestAll(3)

	r = a.do("GET", "/v1/chain/head", key, nil)
	expect(t, r, 200, "")
	if head := r.json(t); head["seq"] != 3.0 || len(head["txId"].(string)) != 64 {
		t.Fatalf("head %s", r.body)
	}
	r = a.do("GET", "/v1/chain/verify", key, nil)
	expect(t, r, 200, "")
	if v := r.json(t); v["ok"] != true || v["checked"] != 3.0 {
		t.Fatalf("verify %s", r.body)
	}
	r = a.do("GET", "/v1/assets/"+ups[1].AssetID+"/attestation", key, nil)
	expect(t, r, 200, "")
	var att struct {
		Status string
		Record struct {
			CID       string
			Payload   []byte
			Signature []byte
			PublicKey string
		}
	}
	json.Unmarshal(r.body, &att)
	if att.Status != "attested" || att.Record.CID != corpus(t, "photos/dune.jpg")[0].sum() {
		t.Fatalf("attestation %s", r.body)
	}
	if !ed25519.Verify(a.chainKey.Public().(ed25519.PublicKey), att.Record.Payload, att.Record.Signature) {
		t.Fatal("the attestation's signature does not verify with the chain key")
	}
	r = a.do("GET", "/v1/chain/publicKey", key, nil)
	expect(t, r, 200, "")
	if r.json(t)["hex"] != att.Record.PublicKey {
		t.Fatalf("public key %s vs %s", r.body, att.Record.PublicKey)
	}

	// Tampering with a stored record is caught and named.
	a.env.DB.MustExec(`UPDATE attestations SET cid = 'ff' || substr(cid, 3) WHERE seq = 2`)
	r = a.do("GET", "/v1/chain/verify?fromSeq=1&toSeq=3", key, nil)
	v := r.json(t)
	if v["ok"] != false || v["firstBroken"].(map[string]any)["seq"] != 2.0 {
		t.Fatalf("verify after tampering: %s", r.body)
	}
	expect(t, a.do("GET", "/v1/chain/verify?fromSeq=x", key, nil), 400, "validation_failed")

	bob := a.user("bob@example.org", false)
	expect(t, a.do("GET", "/v1/assets/"+ups[0].AssetID+"/attestation", bob, nil), 404, "not_found")
}

// An operator rotates the chain's key: the new key signs what comes next,
// the old one, retired, still verifies what it signed, and each
// attestation names the key that signed it.
func TestChainKeyRotation(t *testing.T) {
	env := testenv.New(t)
	before := startApp(t, env, env.Redis)
	key := before.user("ana@example.org", false)
	project := before.newProject(key)
	r, ups := before.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))
	expect(t, r, 200, "")
	before.attestAll(2)
	r = before.do("GET", "/v1/chain/publicKey", key, nil)
	expect(t, r, 200, "")
	oldHex := r.json(t)["hex"].(string)

	newKey := newChainKey(t)
	after := startAppWith(t, env, env.Redis, options{env: map[string]string{"CHAIN_KEY": newKey, "CHAIN_RETIRED_KEYS": oldHex}})
	r, more := after.uploadAll(key, project, corpus(t, "photos/storm.jpg"))
	expect(t, r, 200, "")
	after.attestAll(1)

	r = after.do("GET", "/v1/chain/publicKey", key, nil)
	expect(t, r, 200, "")
	var keys chain.KeySet
	json.Unmarshal(r.body, &keys)
	if keys.Hex == oldHex || len(keys.Retired) != 1 || keys.Retired[0].Hex != oldHex {
		t.Fatalf("public keys after the rotation: %s, want a new key and %s retired", r.body, oldHex)
	}
	r = after.do("GET", "/v1/chain/verify", key, nil)
	expect(t, r, 200, "")
	if v := r.json(t); v["ok"] != true || v["checked"] != 3.0 {
		t.Fatalf("verify across the rotation: %s", r.body)
	}
	for _, c := range []struct{ asset, key string }{{ups[0].AssetID, oldHex}, {more[0].AssetID, keys.Hex}} {
		r = after.do("GET", "/v1/assets/"+c.asset+"/attestation", key, nil)
		expect(t, r, 200, "")
		var att chain.AssetAttestation
		json.Unmarshal(r.body, &att)
		pub, _ := hex.DecodeString(c.key)
		if att.Record == nil || att.Record.PublicKey != c.key || !ed25519.Verify(pub, att.Record.Payload, att.Record.Signature) {
			t.Fatalf("attestation %s, want one signed by %s", r.body, c.key)
		}
	}

	// The new key without the old one retired: what the old key signed
	// no longer verifies, and the answer says why.
	forgot := startAppWith(t, env, env.Redis, options{env: map[string]string{"CHAIN_KEY": newKey}})
	r = forgot.do("GET", "/v1/chain/verify", key, nil)
	expect(t, r, 200, "")
	var v chain.VerifyResult
	json.Unmarshal(r.body, &v)
	if v.OK || v.FirstBroken == nil || v.FirstBroken.Seq != 1 || v.FirstBroken.Reason != chain.ReasonUnknownKey {
		t.Fatalf("verify without the retired key: %s, want broken at seq 1: unknown_key", r.body)
	}
}

// A cid is the SHA-256 of a private original: another user must not learn
// it from the head, from the link in their own attestation, or from /readyz,
// or they could test whether a known file was uploaded.
func TestChainHidesOtherUsersCids(t *testing.T) {
	a := newApp(t)
	ana, bob, admin := a.user("ana@example.org", false), a.user("bob@example.org", false), a.user("root@example.org", true)
	r, anas := a.uploadAll(ana, a.newProject(ana), corpus(t, "photos/wood.jpg"))
	expect(t, r, 200, "")
	r, bobs := a.uploadAll(bob, a.newProject(bob), corpus(t, "photos/dune.jpg"))
	expect(t, r, 200, "")
	a.attestAll(2)
	anaSum, bobSum := corpus(t, "photos/wood.jpg")[0].sum(), corpus(t, "photos/dune.jpg")[0].sum()
	// Ana's asset was queued first, so it is seq 1 and bob's links to it.
	for _, tc := range []struct {
		who, key, want string
	}{{"bob, the head's owner", bob, bobSum}, {"an admin", admin, bobSum}, {"ana", ana, ""}} {
		r = a.do("GET", "/v1/chain/head", tc.key, nil)
		expect(t, r, 200, "")
		if cid, _ := r.json(t)["cid"].(string); cid != tc.want {
			t.Errorf("head cid for %s: %q, want %q", tc.who, cid, tc.want)
		}
	}
	r = a.do("GET", "/v1/assets/"+bobs[0].AssetID+"/attestation", bob, nil)
	expect(t, r, 200, "")
	if strings.Contains(string(r.body), anaSum) {
		t.Fatalf("bob's attestation shows ana's cid: %s", r.body)
	}
	if rec := r.json(t)["record"].(map[string]any); rec["cid"] != bobSum || rec["seq"] != 2.0 {
		t.Fatalf("bob's own attestation: %s", r.body)
	}
	r = a.do("GET", "/v1/assets/"+anas[0].AssetID+"/attestation", ana, nil)
	if rec := r.json(t)["record"].(map[string]any); rec["payload"] == nil {
		t.Fatalf("the first entry's link to the genesis is no one's secret: %s", r.body)
	}
	r = a.do("GET", "/readyz", "", nil)
	expect(t, r, 200, "")
	if strings.Contains(string(r.body), bobSum) || strings.Contains(string(r.body), anaSum) {
		t.Fatalf("readyz shows a cid: %s", r.body)
	}
}

func TestChainVerifyRangeIsCapped(t *testing.T) {
	a := newApp(t)
	key, admin := a.user("ana@example.org", false), a.user("root@example.org", true)
	expect(t, a.do("GET", "/v1/chain/verify?fromSeq=1&toSeq=10001", key, nil), 400, "range_too_large")
	expect(t, a.do("GET", "/v1/chain/verify?fromSeq=1&toSeq=10000", key, nil), 200, "")
	expect(t, a.do("GET", "/v1/chain/verify?fromSeq=5", key, nil), 200, "")
	// The default range ends at the largest seq, not past it.
	r := a.do("GET", "/v1/chain/verify?fromSeq=9223372036854775807", key, nil)
	expect(t, r, 200, "")
	if m := r.json(t); m["ok"] != true || m["checked"] != 0.0 {
		t.Fatalf("verify from the largest seq: %s", r.body)
	}
	expect(t, a.do("GET", "/v1/chain/verify?fromSeq=1&toSeq=1000000", admin, nil), 200, "")
}

// attestAll flushes the attestation queue to a file ledger and checks that
// n entries were attested.
func (a *app) attestAll(n int) {
	a.t.Helper()
	ledger, err := chain.OpenFileLedger(filepath.Join(a.t.TempDir(), "ledger.jsonl"))
	if err != nil {
		a.t.Fatal(err)
	}
	defer ledger.Close()
	f := &chain.Flusher{Store: a.env.Store, Key: a.chainKey, Ledger: ledger}
	if res, err := f.Drain(context.Background()); err != nil || res.Attested != n {
		a.t.Fatalf("flush: %+v %v", res, err)
	}
}
