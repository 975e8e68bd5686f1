package server_test

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"

	"lightbox/chain"
	"lightbox/testsupport/testenv"
)

func TestChainEndpoints(t *testing.T) {
	t.Parallel()
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
	if v := decode[chain.VerifyResult](t, r); !v.OK || v.Checked != 3 {
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
	if v := decode[chain.VerifyResult](t, r); v.OK || v.FirstBroken == nil || v.FirstBroken.Seq != 2 {
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
	t.Parallel()
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
	keys := decode[chain.KeySet](t, r)
	if keys.Hex == oldHex || len(keys.Retired) != 1 || keys.Retired[0].Hex != oldHex {
		t.Fatalf("public keys after the rotation: %s, want a new key and %s retired", r.body, oldHex)
	}
	r = after.do("GET", "/v1/chain/verify", key, nil)
	expect(t, r, 200, "")
	if v := decode[chain.VerifyResult](t, r); !v.OK || v.Checked != 3 {
		t.Fatalf("verify across the rotation: %s", r.body)
	}
	for _, c := range []struct{ asset, key string }{{ups[0].AssetID, oldHex}, {more[0].AssetID, keys.Hex}} {
		r = after.do("GET", "/v1/assets/"+c.asset+"/attestation", key, nil)
		expect(t, r, 200, "")
		att := decode[chain.AssetAttestation](t, r)
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
	v := decode[chain.VerifyResult](t, r)
	if v.OK || v.FirstBroken == nil || v.FirstBroken.Seq != 1 || v.FirstBroken.Reason != chain.ReasonUnknownKey {
		t.Fatalf("verify without the retired key: %s, want broken at seq 1: unknown_key", r.body)
	}
}

// A cid is the SHA-256 of a private original: another user must not learn
// it from the head, from the link in their own attestation, or from /readyz,
// or they could test whether a known file was uploaded.
func TestChainHidesOtherUsersCids(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	a := newApp(t)
	key, admin := a.user("ana@example.org", false), a.user("root@example.org", true)
	expect(t, a.do("GET", "/v1/chain/verify?fromSeq=1&toSeq=10001", key, nil), 400, "range_too_large")
	expect(t, a.do("GET", "/v1/chain/verify?fromSeq=1&toSeq=10000", key, nil), 200, "")
	expect(t, a.do("GET", "/v1/chain/verify?fromSeq=5", key, nil), 200, "")
	// The default range ends at the largest seq, not past it.
	r := a.do("GET", "/v1/chain/verify?fromSeq=9223372036854775807", key, nil)
	expect(t, r, 200, "")
	if m := decode[chain.VerifyResult](t, r); !m.OK || m.Checked != 0 {
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

// get sends one GET with key as its Bearer credential, from any goroutine.
func get(url, key string) (reply, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: b}, err
}

// One user sends 20 chain verifications at once, again every 200 ms, on a
// chain longer than one verification reads (each checks the newest 1,000
// entries, about 90 ms of CPU), while another user lists projects. Exactly
// one verification runs; the others are refused as busy or answered from
// its kept outcome, and the other user's p99 stays under 250 ms, plus
// twice the p99 of a second server asked at the same moments while a third
// user sends it as many ordinary requests (project listings) at the same
// pace, plus the time one verification of 1,000 other entries took there
// before the attack: the flood costs others no more than one verification
// and as much ordinary traffic, and what the busy machine adds to both is
// not the attack's. (Unbounded, the twenty ran side by side every 200 ms.)
// The servers are processes of their own, built without the race
// detector, so the figures are the servers'.
func TestChainVerifyFloodFromOneUser(t *testing.T) {
	testenv.Alone(t)
	const entries, volley, samples = 1_500, 20, 400
	env := testenv.New(t)
	ctx := context.Background()
	_, signer, _ := ed25519.GenerateKey(nil)
	der, err := x509.MarshalPKCS8PrivateKey(signer)
	if err != nil {
		t.Fatal(err)
	}
	owner, project := env.Project(t)
	setup := time.Now()
	env.Finalize(t, owner, project, testenv.Files(entries)...)
	t.Logf("finalize %v", time.Since(setup))
	ledger, err := chain.OpenFileLedger(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	flusher := &chain.Flusher{Store: env.Store, Key: signer, Ledger: ledger, Logger: slog.New(slog.DiscardHandler)}
	if res, err := flusher.Drain(ctx); err != nil || res.Attested != entries {
		t.Fatalf("attest %d: %+v, %v", entries, res, err)
	}
	t.Logf("attest %v", time.Since(setup))
	const metricsToken = "scrape-0123456789"
	srv := startServerProcess(t, env, map[string]string{"CHAIN_KEY": base64.StdEncoding.EncodeToString(der), "METRICS_TOKEN": metricsToken,
		"RATE_API_PER_MINUTE": "100000", "RATE_API_BURST": "10000"}) // the other user measures, unthrottled
	base := "http://" + srv.addr
	newKey := func(email string) string {
		u, err := env.Store.CreateUser(ctx, email, false)
		if err != nil {
			t.Fatal(err)
		}
		key, _, err := env.Store.CreateAPIKey(ctx, u.ID, "test")
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	attacker, other, busy := newKey("mallory@example.org"), newKey("ana@example.org"), newKey("bea@example.org")

	// A second server nobody attacks, asked in turns with the attacked one,
	// carrying the same traffic of ordinary requests.
	control := startServerProcess(t, env, map[string]string{"CHAIN_KEY": base64.StdEncoding.EncodeToString(der),
		"RATE_API_PER_MINUTE": "100000", "RATE_API_BURST": "10000"})
	measure := func() (p99, controlP99 time.Duration) {
		var took, controlTook []time.Duration
		ask := func(url string, into *[]time.Duration) {
			start := time.Now()
			r, err := get(url+"/v1/projects", other)
			*into = append(*into, time.Since(start))
			if err != nil || r.status != 200 {
				t.Fatalf("the other user's request: %v %d %s", err, r.status, r.body)
			}
		}
		for len(took) < samples {
			ask(base, &took)
			ask("http://"+control.addr, &controlTook)
		}
		_, p99 = testenv.Percentiles(took)
		_, controlP99 = testenv.Percentiles(controlTook)
		return p99, controlP99
	}
	baseline, _ := measure()
	// One verification, of entries the attack does not ask for, so that
	// its outcome is not the one the attacker finds kept.
	start := time.Now()
	r, err := get(base+"/v1/chain/verify?fromSeq=1", newKey("cai@example.org"))
	single := time.Since(start)
	if err != nil || r.status != 200 {
		t.Fatalf("one verification of seq 1 on: %v %d %s", err, r.status, r.body)
	}
	if v := decode[chain.VerifyResult](t, r); !v.OK || v.Checked != 1000 {
		t.Fatalf("one verification of seq 1 on: %s", r.body)
	}

	// The attack, and as much ordinary traffic on the second server, until
	// the other user has measured enough.
	measured := make(chan struct{})
	var (
		mu      sync.Mutex
		answers = map[string]int{} // "200", or "429 <code>"
		bad     []string
	)
	volleys := func(url, key string, answer func(reply, error)) {
		for {
			var wg sync.WaitGroup
			for range volley {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := get(url, key)
					mu.Lock()
					defer mu.Unlock()
					answer(r, err)
				}()
			}
			wg.Wait()
			select {
			case <-measured:
				return
			case <-time.After(200 * time.Millisecond): // the attack's pace
			}
		}
	}
	var loads sync.WaitGroup
	loads.Add(2)
	go func() {
		defer loads.Done()
		volleys(base+"/v1/chain/verify", attacker, func(r reply, err error) {
			switch {
			case err != nil:
				bad = append(bad, err.Error())
			case r.status == 200:
				var v chain.VerifyResult
				if json.Unmarshal(r.body, &v) != nil || !v.OK || v.Checked != 1000 {
					bad = append(bad, "200 "+string(r.body))
				}
				answers["200"]++
			case r.status == 429 && r.header.Get("Retry-After") != "":
				var e struct{ Code string }
				json.Unmarshal(r.body, &e)
				answers["429 "+e.Code]++
			default:
				bad = append(bad, fmt.Sprintf("%d %s", r.status, r.body))
			}
		})
	}()
	go func() {
		defer loads.Done()
		volleys("http://"+control.addr+"/v1/projects", busy, func(r reply, err error) {
			if err != nil || r.status != 200 {
				bad = append(bad, fmt.Sprintf("ordinary traffic: %v %d %s", err, r.status, r.body))
			}
		})
	}()
	p99, controlP99 := measure()
	close(measured)
	loads.Wait()
	t.Logf("the other user's p99 under the attack: %v over %d requests (%v without it, %v meanwhile from a server with as much ordinary traffic; one verification took %v); the attacker's answers: %v",
		p99, samples, baseline, controlP99, single, answers)
	if len(bad) > 0 {
		t.Fatalf("%d unexpected answers to the attacker, such as %q", len(bad), bad[:min(3, len(bad))])
	}

	// The other user's own verification is the kept outcome.
	r, err = get(base+"/v1/chain/verify", other)
	if err != nil || r.status != 200 {
		t.Fatalf("the other user's verification: %v %d %s", err, r.status, r.body)
	}
	m := testenv.Scrape(t, base+"/metrics", "Bearer "+metricsToken)
	count := func(outcome string) int {
		return int(m.Value("lightbox_chain_verifications_total", map[string]string{"outcome": outcome}))
	}
	if ran, kept, busy := count("ran"), count("kept"), count("busy"); ran != 2 || kept != answers["200"] || busy != answers["429 busy"] {
		t.Errorf("verifications ran %d, kept %d, busy %d; want 2 runs (the attacker's one and the one timed before), and %d kept and %d busy as answered (%v)",
			ran, kept, busy, answers["200"], answers["429 busy"], answers)
	}
	if p99 >= 250*time.Millisecond+2*controlP99+single {
		t.Errorf("the other user's p99 is %v under the attack, want under 250 ms + 2 × %v (the p99 of a server with as much ordinary traffic) + %v (one verification)", p99, controlP99, single)
	}
}

// holdVerifyLock takes the lock a user's chain verification holds, as a
// verification running on another server would, until the test releases it.
func (a *app) holdVerifyLock(key string) (release func()) {
	a.t.Helper()
	ctx := context.Background()
	p, err := a.env.Store.PrincipalByAPIKey(ctx, key)
	if err != nil {
		a.t.Fatal(err)
	}
	lock, err := redislock.New(a.env.Redis).Obtain(ctx, "lightbox:chain-verify-lock:"+p.ID.String(), time.Hour, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	return func() { lock.Release(ctx) }
}

// While a user's verification runs, another of theirs is 429 busy with
// Retry-After, on the user route and the admin's, and a busy answer is not
// replayed for its Idempotency-Key; other users verify meanwhile.
func TestChainVerifyIsOneAtATimePerUser(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ana, bob, admin := a.user("ana@example.org", false), a.user("bob@example.org", false), a.user("root@example.org", true)
	_, _ = a.uploadAll(ana, a.newProject(ana), corpus(t, "photos/wood.jpg"))
	a.attestAll(1)

	release := a.holdVerifyLock(ana)
	r := a.do("GET", "/v1/chain/verify", ana, nil)
	expect(t, r, 429, "busy")
	if r.header.Get("Retry-After") != "1" || details(t, r)["retryAfter"] != 1.0 {
		t.Fatalf("busy without Retry-After: %v %s", r.header, r.body)
	}
	expect(t, a.do("GET", "/v1/chain/verify", bob, nil), 200, "")
	release()
	r = a.do("GET", "/v1/chain/verify", ana, nil)
	expect(t, r, 200, "")
	if v := decode[chain.VerifyResult](t, r); !v.OK || v.Checked != 1 {
		t.Fatalf("verify: %s", r.body)
	}
	// Bob's outcome was kept for ana; once the head moves, it is checked again.
	_, _ = a.uploadAll(ana, a.newProject(ana), corpus(t, "photos/dune.jpg"))
	a.attestAll(1)
	r = a.do("GET", "/v1/chain/verify", ana, nil)
	if v := decode[chain.VerifyResult](t, r); !v.OK || v.Checked != 2 {
		t.Fatalf("verify after the head moved: %s", r.body)
	}
	m := testenv.Scrape(t, a.url+"/metrics", "Bearer "+admin)
	for outcome, want := range map[string]float64{"ran": 2, "kept": 1, "busy": 1} {
		if got := m.Value("lightbox_chain_verifications_total", map[string]string{"outcome": outcome}); got != want {
			t.Errorf("verifications %s: %v, want %v", outcome, got, want)
		}
	}

	release = a.holdVerifyLock(admin)
	expect(t, a.do("POST", "/v1/admin/chain/verify", admin, nil, "Idempotency-Key", "verify-1"), 429, "busy")
	release()
	expect(t, a.do("POST", "/v1/admin/chain/verify", admin, nil, "Idempotency-Key", "verify-1"), 200, "")
}
