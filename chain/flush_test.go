package chain_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lightbox/chain"
	"lightbox/store"
)

func TestFlushAllPublish(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	assets := f.queue(t, 120)
	l := &memLedger{}

	res, err := f.flusher(l, 50).Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attested != 120 || res.Signed != 120 || res.Failed != 0 || res.More {
		t.Fatalf("drain = %+v, want 120 attested and nothing more", res)
	}
	if res.Head.Seq != 120 {
		t.Fatalf("head seq %d, want 120", res.Head.Seq)
	}
	if c := f.counts(t); c.Attested != 120 || c.Pending+c.Signing+c.Failed+c.Abandoned != 0 {
		t.Fatalf("queue = %+v, want all 120 attested", c)
	}
	if n := len(l.published()); n != 120 {
		t.Fatalf("ledger holds %d transactions, want 120", n)
	}
	f.verifyOK(t, 120)

	// The chain follows queue order, and each link names the one before.
	rows := f.chainRows(t)
	for i, r := range rows {
		if r.Seq != int64(i+1) || *r.AssetID != assets[i] {
			t.Fatalf("row %d is seq %d asset %s, want seq %d asset %s", i, r.Seq, r.AssetID, i+1, assets[i])
		}
		if i == 0 && (r.PrevTx != chain.Genesis || r.PrevCID != chain.Genesis) {
			t.Fatalf("seq 1 links to %q/%q, want genesis", r.PrevTx, r.PrevCID)
		}
		if i > 0 && (r.PrevTx != rows[i-1].TxID || r.PrevCID != rows[i-1].CID) {
			t.Fatalf("seq %d does not link to seq %d", r.Seq, rows[i-1].Seq)
		}
	}

	head, err := chain.ReadHead(ctx, f.st)
	if err != nil {
		t.Fatal(err)
	}
	if head.TxID != rows[119].TxID || head.CID != rows[119].CID || head.LastBatchSize != 20 || head.LastBatchMs <= 0 {
		t.Fatalf("head = %+v, want the last row and a last batch of 20", head)
	}

	// An asset's record is what an owner needs to check it offline.
	a, err := chain.AttestationOf(ctx, f.st, f.keys(), assets[6])
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != store.AttestAttested || a.Record == nil {
		t.Fatalf("attestation of asset 7 = %+v, want attested with a record", a)
	}
	r := a.Record
	if r.Seq != 7 || r.Statement.Attestation.Seq != 7 || r.Statement.Manifest.Filename != "IMG_7.jpg" ||
		r.Statement.Manifest.ByteSize != 1007 || r.Statement.Manifest.ContentType != "image/jpeg" ||
		r.Statement.Manifest.AssetID != assets[6].String() || r.Statement.Attestation.PI != f.project.String() ||
		r.Statement.Attestation.Op != "ingest" || r.Statement.Attestation.Vis != "private" {
		t.Fatalf("record = %+v", r)
	}
	pubHex, _ := hex.DecodeString(r.PublicKey)
	tx := &chain.Transaction{TxID: r.TxID, Seq: r.Seq, CID: r.CID, PrevTx: r.PrevTx, PrevCID: r.PrevCID, Payload: r.Payload, Signature: r.Signature}
	if reason, msg := chain.Check(pubHex, tx); reason != "" {
		t.Fatalf("the record does not check under its own public key: %s %s", reason, msg)
	}
}

func TestFlushEmptyQueueDoesNothing(t *testing.T) {
	f := newFixture(t)
	res, err := f.flusher(&memLedger{}, 50).Flush(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Signed != 0 || res.More || res.Head.Seq != 0 {
		t.Fatalf("flush of an empty queue = %+v", res)
	}
	f.verifyOK(t, 0)
}

func TestFlushRefusesWithoutKeyOrLedger(t *testing.T) {
	f := newFixture(t)
	f.queue(t, 1)
	for name, fl := range map[string]*chain.Flusher{
		chain.CodeInvalidKey:    {Store: f.st, Ledger: &memLedger{}},
		chain.CodeInvalidLedger: {Store: f.st, Key: f.key},
	} {
		_, err := fl.Flush(context.Background())
		var ce *chain.Error
		if !errors.As(err, &ce) || ce.Code != name {
			t.Errorf("flush: %v, want %s", err, name)
		}
	}
	if c := f.counts(t); c.Pending != 1 {
		t.Fatalf("queue = %+v after refused flushes, want the item still pending", c)
	}
}

func TestFlushMiddleFailureKeepsPrefix(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.queue(t, 10)
	rows := f.queueRows(t)
	failing := rows[4] // becomes seq 5
	l := &memLedger{fail: failCID(failing.CID, 1)}
	fl := f.flusher(l, 10)

	res, err := fl.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Signing stops at the failure, so 5 to 10 were signed.
	if res.Signed < 5 || res.Attested != 4 || res.Failed != 1 || res.Requeued != 5 || !res.More || res.Head.Seq != 4 {
		t.Fatalf("flush = %+v, want 4 attested, 1 failed, 5 requeued, head 4", res)
	}
	after := f.queueRows(t)
	for i, r := range after {
		want := map[bool]string{true: store.AttestAttested, false: store.AttestPending}[i < 4]
		if i == 4 {
			want = store.AttestFailed
		}
		if r.Status != want {
			t.Fatalf("item %d is %s, want %s", i, r.Status, want)
		}
	}
	if after[4].Attempts != 1 || after[4].LastError == nil {
		t.Fatalf("failed item = %+v, want one attempt and its error", after[4])
	}
	for _, r := range after[5:] {
		if r.Attempts != 0 {
			t.Fatalf("item %d after the failure counted an attempt", r.ID)
		}
	}
	f.verifyOK(t, 4)

	// The next flush signs the rest again, linking from the new head.
	res, err = fl.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attested != 6 || res.Head.Seq != 10 || res.More {
		t.Fatalf("second flush = %+v, want the other 6 attested", res)
	}
	f.verifyOK(t, 10)
	chainRows := f.chainRows(t)
	if chainRows[4].QueueID != failing.ID {
		t.Fatalf("seq 5 is queue item %d, want the one that failed (%d): order is kept", chainRows[4].QueueID, failing.ID)
	}
}

func TestFlushFirstFailureAttestsNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.queue(t, 5)
	rows := f.queueRows(t)
	l := &memLedger{fail: failCID(rows[0].CID, 1)}

	res, err := f.flusher(l, 5).Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attested != 0 || res.Failed != 1 || res.Requeued != 4 || res.Head.Seq != 0 {
		t.Fatalf("flush = %+v, want nothing attested and the head at 0", res)
	}
	if n, _ := f.st.Attestations(ctx, 0, 100, 100); len(n) != 0 {
		t.Fatalf("%d attestation rows after the first item failed", len(n))
	}
	c := f.counts(t)
	if c.Failed != 1 || c.Pending != 4 {
		t.Fatalf("queue = %+v, want 1 failed and 4 pending", c)
	}
	if _, err := f.flusher(l, 5).Flush(ctx); err != nil {
		t.Fatal(err)
	}
	f.verifyOK(t, 5)
}

func TestFlushAbandonsAfterFiveFailures(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.queue(t, 3)
	rows := f.queueRows(t)
	l := &memLedger{fail: failCID(rows[1].CID, 1000)}
	fl := f.flusher(l, 10)

	for i := 1; i <= chain.MaxAttempts; i++ {
		res, err := fl.Flush(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed != 1 || (res.Abandoned == 1) != (i == chain.MaxAttempts) {
			t.Fatalf("flush %d = %+v", i, res)
		}
	}
	bad := f.queueRows(t)[1]
	if bad.Status != store.AttestAbandoned || bad.Attempts != chain.MaxAttempts || bad.LastError == nil {
		t.Fatalf("item = %+v, want abandoned after %d attempts, with its error", bad, chain.MaxAttempts)
	}
	// Later flushes skip it, and the chain goes on without it.
	res, err := fl.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attested != 1 || res.More {
		t.Fatalf("drain after abandoning = %+v, want the last item attested", res)
	}
	if c := f.counts(t); c.Attested != 2 || c.Abandoned != 1 {
		t.Fatalf("queue = %+v", c)
	}
	f.verifyOK(t, 2)
	a, err := chain.AttestationOf(ctx, f.st, f.keys(), *bad.AssetID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != store.AttestAbandoned || a.Record != nil || a.LastError == "" {
		t.Fatalf("abandoned asset's attestation = %+v", a)
	}
}

// A cancelled context (shutdown, task timeout) still commits what did
// publish, and gives the rest back without counting an attempt.
func TestFlushCancelledKeepsPublishedPrefix(t *testing.T) {
	f := newFixture(t)
	f.queue(t, 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32
	l := &cancelLedger{after: 6, cancel: cancel, n: &n}
	fl := f.flusher(l, 20)
	fl.Concurrency = 1 // publish strictly in order, so the prefix is exactly 6

	res, err := fl.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attested != 6 || res.Failed != 0 || res.Requeued != 14 {
		t.Fatalf("cancelled flush = %+v, want 6 attested and 14 requeued with no failure counted", res)
	}
	for _, r := range f.queueRows(t) {
		if r.Attempts != 0 || r.Status == store.AttestSigning {
			t.Fatalf("item %d = %+v after a cancelled flush", r.ID, r)
		}
	}
	res, err = f.flusher(&memLedger{}, 20).Drain(context.Background())
	if err != nil || res.Attested != 14 {
		t.Fatalf("drain after cancel = %+v, %v", res, err)
	}
	f.verifyOK(t, 20)
}

// cancelLedger publishes after items, then cancels the flush and waits for
// the cancellation to reach it.
type cancelLedger struct {
	after  int32
	cancel context.CancelFunc
	n      *atomic.Int32
}

func (l *cancelLedger) Publish(ctx context.Context, tx *chain.Transaction) error {
	if l.n.Add(1) <= l.after {
		return nil
	}
	l.cancel()
	<-ctx.Done()
	return ctx.Err()
}

// The process dies after publishing some of a batch: a child process runs
// the flush with the file ledger and exits in the middle of publishing.
// Postgres rolls the batch back; the items wait in signing until released,
// then are signed again after the head. The chain stays continuous and
// what the dead process published stays in the ledger as orphans.
func TestFlushSurvivesCrashAfterPublishing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dir := t.TempDir()
	keyPath, ledgerPath := filepath.Join(dir, "key.pem"), filepath.Join(dir, "ledger.jsonl")
	if _, err := chain.GenerateKeyFile(keyPath); err != nil {
		t.Fatal(err)
	}
	key, err := chain.LoadKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	f.key, f.pub = key, key.Public().(ed25519.PublicKey)

	// A chain that already has a head.
	f.queue(t, 15)
	ledger, err := chain.OpenFileLedger(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.flusher(ledger, 50).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	ledger.Close()

	f.queue(t, 30)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashingFlusher$", "-test.v")
	cmd.Env = append(os.Environ(), "LB_CRASH_DSN="+f.env.DSN, "LB_CRASH_KEY="+keyPath, "LB_CRASH_LEDGER="+ledgerPath, "LB_CRASH_AFTER=12")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("child flusher: %v, want exit status 3 mid-publish\n%s", err, out)
	}

	head, _ := chain.ReadHead(ctx, f.st)
	if c := f.counts(t); head.Seq != 15 || c.Signing != 30 {
		t.Fatalf("after the crash: head %d, queue %+v; want head 15 and 30 items stuck in signing", head.Seq, c)
	}
	published := readLedgerFile(t, ledgerPath)
	if len(published) < 15+12 {
		t.Fatalf("ledger holds %d transactions, want at least the 15 attested and 12 the dead process published", len(published))
	}

	// Uploads go on while the dead flusher's items wait: the chain moves
	// past them.
	newer := f.queue(t, 5)
	ledger, err = chain.OpenFileLedger(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	fl := f.flusher(ledger, 50)
	if res, err := fl.Drain(ctx); err != nil || res.Attested != 5 || res.Head.Seq != 20 {
		t.Fatalf("drain beside the stuck items = %+v, %v; want the 5 new ones at 16..20", res, err)
	}

	// The sweeper leaves fresh claims alone, and frees them once stale.
	if n, err := chain.ReleaseStale(ctx, f.st, chain.StaleAfter); err != nil || n != 0 {
		t.Fatalf("ReleaseStale(StaleAfter) released %d (%v), want 0 of a fresh claim", n, err)
	}
	if n, err := chain.ReleaseStale(ctx, f.st, 0); err != nil || n != 30 {
		t.Fatalf("ReleaseStale(0) released %d (%v), want 30", n, err)
	}
	res, err := fl.Drain(ctx)
	if err != nil || res.Attested != 30 || res.Head.Seq != 50 {
		t.Fatalf("drain after recovery = %+v, %v; want 30 attested up to seq 50", res, err)
	}
	f.verifyOK(t, 50)
	if rows := f.chainRows(t); *rows[15].AssetID != newer[0] {
		t.Fatalf("seq 16 is asset %s, want the first upload after the crash", rows[15].AssetID)
	}

	// Every attestation is in the ledger; the dead process's are orphans.
	inLedger := map[string]bool{}
	for _, tx := range readLedgerFile(t, ledgerPath) {
		inLedger[tx.TxID] = true
	}
	inChain := map[string]bool{}
	for _, r := range f.chainRows(t) {
		inChain[r.TxID] = true
		if !inLedger[r.TxID] {
			t.Fatalf("seq %d (tx %s) is not in the ledger", r.Seq, r.TxID)
		}
	}
	orphans := 0
	for id := range inLedger {
		if !inChain[id] {
			orphans++
		}
	}
	// Signed against another head, the dead process's transactions can
	// never be part of the chain.
	if orphans < 12 {
		t.Fatalf("%d orphans in the ledger, want the at least 12 the dead process published", orphans)
	}
}

// TestCrashingFlusher is the child of TestFlushSurvivesCrashAfterPublishing.
func TestCrashingFlusher(t *testing.T) {
	dsn := os.Getenv("LB_CRASH_DSN")
	if dsn == "" {
		t.Skip("run by TestFlushSurvivesCrashAfterPublishing")
	}
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	key, err := chain.LoadKey(os.Getenv("LB_CRASH_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := chain.OpenFileLedger(os.Getenv("LB_CRASH_LEDGER"))
	if err != nil {
		t.Fatal(err)
	}
	after, _ := strconv.Atoi(os.Getenv("LB_CRASH_AFTER"))
	fl := &chain.Flusher{Store: st, Key: key, Ledger: &dyingLedger{next: ledger, after: int32(after)}, BatchSize: 50, Concurrency: 4}
	fl.Flush(ctx)
	fmt.Println("the flush finished; it should have died")
	os.Exit(1)
}

// dyingLedger publishes after items, then ends the process.
type dyingLedger struct {
	next  chain.Ledger
	after int32
	done  atomic.Int32
	mu    sync.Mutex
}

func (l *dyingLedger) Publish(ctx context.Context, tx *chain.Transaction) error {
	if l.done.Load() >= l.after {
		l.mu.Lock() // the others wait while the process exits
		os.Exit(3)
	}
	err := l.next.Publish(ctx, tx)
	if err == nil {
		l.done.Add(1)
	}
	return err
}

// Two flushers, each with its own connections, drain one queue at once:
// they take turns, and not one signature is wasted on a forked head.
func TestConcurrentFlushersNeverFork(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const total = 400
	f.queue(t, total)
	l := &memLedger{delay: time.Millisecond}

	var wg sync.WaitGroup
	attested := make([]int, 2)
	errs := make([]error, 2)
	for i := range 2 {
		st, err := store.Open(ctx, f.env.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		fl := &chain.Flusher{Store: st, Key: f.key, Ledger: l, BatchSize: 25, Concurrency: 8, Logger: f.log}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				res, err := fl.Flush(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				attested[i] += res.Attested
				if !res.More {
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("flusher %d: %v", i, err)
		}
	}
	if attested[0]+attested[1] != total {
		t.Fatalf("flushers attested %v, want %d in all", attested, total)
	}
	t.Logf("flushers attested %v", attested)
	f.verifyOK(t, total)
	// Had both signed on one head, the loser's published transactions
	// would be in the ledger and not in the chain.
	if n := len(l.published()); n != total {
		t.Fatalf("ledger received %d transactions for %d attestations: a flusher signed on a stale head", n, total)
	}
}

func TestReleaseStaleLeavesFreshClaims(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.queue(t, 4)
	if _, err := f.st.ClaimAttestations(ctx, 4); err != nil {
		t.Fatal(err)
	}
	// Two of them were claimed 11 minutes ago by a flusher that died.
	f.env.Age(t, "attestation_queue", "claimed_at", 11*time.Minute, "id IN (SELECT id FROM attestation_queue ORDER BY id LIMIT 2)")
	n, err := chain.ReleaseStale(ctx, f.st, chain.StaleAfter)
	if err != nil || n != 2 {
		t.Fatalf("released %d (%v), want 2", n, err)
	}
	rows := f.queueRows(t)
	for i, r := range rows {
		want := map[bool]string{true: store.AttestPending, false: store.AttestSigning}[i < 2]
		if r.Status != want || r.Attempts != 0 {
			t.Fatalf("item %d = %+v, want %s with no attempt counted", i, r, want)
		}
	}
}
