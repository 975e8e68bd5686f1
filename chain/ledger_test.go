package chain_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lightbox/chain"
)

func TestFileLedgerPublishesDurableLines(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger", "chain.jsonl")
	l, err := chain.OpenFileLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	f.queue(t, 60)
	res, err := f.flusher(l, 25).Drain(ctx)
	if err != nil || res.Attested != 60 {
		t.Fatalf("drain = %+v, %v", res, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLedgerFile(t, path)
	if len(lines) != 60 {
		t.Fatalf("ledger file holds %d transactions, want 60", len(lines))
	}
	bySeq := map[int64]chain.Transaction{}
	for _, tx := range lines {
		if reason, msg := chain.Check(f.pub, &tx); reason != "" {
			t.Fatalf("ledger line seq %d does not check: %s %s", tx.Seq, reason, msg)
		}
		bySeq[tx.Seq] = tx
	}
	for _, r := range f.chainRows(t) {
		if bySeq[r.Seq].TxID != r.TxID {
			t.Fatalf("seq %d: ledger has tx %s, chain has %s", r.Seq, bySeq[r.Seq].TxID, r.TxID)
		}
	}

	// Reopened, it appends after what is there.
	l, err = chain.OpenFileLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	f.queue(t, 5)
	if _, err := f.flusher(l, 25).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if n := len(readLedgerFile(t, path)); n != 65 {
		t.Fatalf("after reopening, ledger holds %d transactions, want 65", n)
	}
	f.verifyOK(t, 65)
}

// A crash can tear the last line; the next line must still start clean.
func TestFileLedgerAfterTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chain.jsonl")
	if err := os.WriteFile(path, []byte(`{"txId":"ab`), 0o640); err != nil {
		t.Fatal(err)
	}
	l, err := chain.OpenFileLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Publish(context.Background(), &chain.Transaction{TxID: "tx", Seq: int64(i + 1)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := len(readLedgerFile(t, path)); n != 50 {
		t.Fatalf("%d whole transactions after a torn line, want 50", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Publish(context.Background(), &chain.Transaction{TxID: "late"}); err == nil {
		t.Fatal("publish to a closed ledger succeeded")
	}
}

// logServer is an external log: it keeps what it is sent, once per
// Idempotency-Key, and fails on command.
type logServer struct {
	mu       sync.Mutex
	entries  map[string]chain.Transaction
	requests int
	fail     func(tx chain.Transaction) int // a status to answer instead, or 0
}

func (s *logServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var tx chain.Transaction
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &tx) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if r.Header.Get("Authorization") != "Bearer log-token" {
		http.Error(w, "who are you", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.fail != nil {
		if code := s.fail(tx); code != 0 {
			http.Error(w, "log is unhappy", code)
			return
		}
	}
	if r.Header.Get("Idempotency-Key") != tx.TxID {
		http.Error(w, "Idempotency-Key must be the tx id", http.StatusBadRequest)
		return
	}
	if _, ok := s.entries[tx.TxID]; ok {
		w.WriteHeader(http.StatusOK) // a repeat: already logged
		return
	}
	s.entries[tx.TxID] = tx
	w.WriteHeader(http.StatusCreated)
}

func TestHTTPLedgerPublishes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	srv := &logServer{entries: map[string]chain.Transaction{}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	l, err := chain.NewHTTPLedger(ts.URL+"/v1/log", 8)
	if err != nil {
		t.Fatal(err)
	}
	l.Header = http.Header{"Authorization": {"Bearer log-token"}}

	f.queue(t, 30)
	rows := f.queueRows(t)
	calls := 0
	srv.fail = func(tx chain.Transaction) int {
		// A refusal of one item, not an outage: whether items after it
		// published before it failed (which decides an outage) is timing.
		if tx.CID == rows[9].CID && calls == 0 {
			calls++
			return http.StatusUnprocessableEntity
		}
		return 0
	}
	res, err := f.flusher(l, 30).Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attested != 9 || res.Failed != 1 {
		t.Fatalf("flush with a 422 at seq 10 = %+v, want 9 attested and 1 failed", res)
	}
	q := f.queueRows(t)[9]
	if q.LastError == nil || !strings.Contains(*q.LastError, "422") {
		t.Fatalf("failed item's error = %v, want the log's 422", q.LastError)
	}
	if _, err := f.flusher(l, 30).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	f.verifyOK(t, 30)
	for _, r := range f.chainRows(t) {
		got, ok := srv.entries[r.TxID]
		if !ok {
			t.Fatalf("seq %d is not in the external log", r.Seq)
		}
		if reason, msg := chain.Check(f.pub, &got); reason != "" {
			t.Fatalf("the log's copy of seq %d does not check: %s %s", r.Seq, reason, msg)
		}
	}

	// Sending the same transaction again is accepted as the same entry.
	before := len(srv.entries)
	tx := srv.entries[f.chainRows(t)[0].TxID]
	if err := l.Publish(ctx, &tx); err != nil {
		t.Fatal(err)
	}
	if len(srv.entries) != before {
		t.Fatal("a repeated tx_id made a second entry")
	}
}

func TestHTTPLedgerErrors(t *testing.T) {
	ctx := context.Background()
	for _, bad := range []string{"", "ftp://log.example/", "/relative", "http://"} {
		_, err := chain.NewHTTPLedger(bad, 4)
		var ce *chain.Error
		if !errors.As(err, &ce) || ce.Code != chain.CodeInvalidLedger {
			t.Errorf("NewHTTPLedger(%q) error %v, want invalid_ledger", bad, err)
		}
	}

	// Without the token the log answers 401, which is not published.
	srv := &logServer{entries: map[string]chain.Transaction{}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	l, _ := chain.NewHTTPLedger(ts.URL, 4)
	if err := l.Publish(ctx, &chain.Transaction{TxID: "x"}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("publish without a token: %v, want the 401", err)
	}

	// A log that never answers is cut off by the context.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the server notices a client leaving only once the body is read
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer hang.Close()
	l, _ = chain.NewHTTPLedger(hang.URL, 4)
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := l.Publish(tctx, &chain.Transaction{TxID: "x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("publish to a silent log: %v, want the deadline", err)
	}
}
