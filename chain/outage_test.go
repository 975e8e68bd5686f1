package chain_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"lightbox/chain"
)

// TestLedgerOutageChargesNobody takes an HTTP ledger down for longer than
// MaxAttempts flushes: no item is charged or abandoned, and once the
// ledger is back every item is published.
func TestLedgerOutageChargesNobody(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.queue(t, 20)
	var down atomic.Bool
	down.Store(true)
	var published atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		published.Add(1)
	}))
	defer srv.Close()
	ledger, err := chain.NewHTTPLedger(srv.URL, 8)
	if err != nil {
		t.Fatal(err)
	}
	fl := f.flusher(ledger, 50)

	for i := 0; i < 3*chain.MaxAttempts; i++ {
		res, err := fl.Drain(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Outage || res.Failed != 0 || res.Attested != 0 || !res.More {
			t.Fatalf("flush %d while the ledger is down = %+v, want an outage charging nobody", i, res)
		}
	}
	for _, r := range f.queueRows(t) {
		if r.Attempts != 0 || r.Status != "pending" {
			t.Fatalf("item %d after the outage: %s, %d attempts", r.ID, r.Status, r.Attempts)
		}
	}

	down.Store(false)
	res, err := fl.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outage || res.Attested != 20 || res.More {
		t.Fatalf("drain after the outage = %+v, want all 20 attested", res)
	}
	if c := f.counts(t); c.Attested != 20 || c.Abandoned+c.Failed != 0 {
		t.Fatalf("queue = %+v", c)
	}
	if n := published.Load(); n < 20 {
		t.Fatalf("the ledger received %d entries, want 20", n)
	}
	f.verifyOK(t, 20)
}

// TestLedgerRefusalStillCharges: a ledger that answers but refuses one
// item (4xx) is that item's fault, even when nothing else was published.
func TestLedgerRefusalStillCharges(t *testing.T) {
	f := newFixture(t)
	f.queue(t, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad entry", http.StatusUnprocessableEntity)
	}))
	defer srv.Close()
	ledger, _ := chain.NewHTTPLedger(srv.URL, 8)
	res, err := f.flusher(ledger, 10).Flush(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Outage || res.Failed != 1 {
		t.Fatalf("flush = %+v, want the refused item charged", res)
	}
}
