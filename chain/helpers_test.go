package chain_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/chain"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

type fixture struct {
	env     *testenv.Env
	st      *store.Store
	key     ed25519.PrivateKey
	pub     ed25519.PublicKey
	owner   uuid.UUID
	project uuid.UUID
	next    int // assets created so far, to number the next ones
	log     *slog.Logger
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	env := testenv.New(t)
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{env: env, st: env.Store, key: key, pub: pub, log: slog.New(slog.NewTextHandler(t.Output(), nil))}
	f.owner, f.project = env.Project(t)
	return f
}

// keys is the chain's key set: f.key signs it, nothing was rotated.
func (f *fixture) keys() chain.Keys { return chain.Keys{Current: f.pub} }

// queue finalizes n assets, IMG_<k>.jpg of 1000+k bytes, which queues each
// for attestation, and returns their ids in queue order.
func (f *fixture) queue(t testing.TB, n int) []uuid.UUID {
	t.Helper()
	uploads := make([]testenv.Upload, n)
	for i := range uploads {
		k := f.next + i + 1
		uploads[i] = testenv.Upload{Filename: fmt.Sprintf("IMG_%d.jpg", k), Data: bytes.Repeat([]byte{byte(k)}, 1000+k)}
	}
	res := f.env.Finalize(t, f.owner, f.project, uploads...)
	ids := make([]uuid.UUID, n)
	for i, a := range res.Assets {
		ids[i] = a.AssetID
	}
	f.next += n
	return ids
}

// flusher's item timeout only bounds a hang: no test's ledger is meant to
// run out of it, even on a busy machine.
func (f *fixture) flusher(l chain.Ledger, batch int) *chain.Flusher {
	return &chain.Flusher{Store: f.st, Key: f.key, Ledger: l, BatchSize: batch, Concurrency: 8, ItemTimeout: time.Minute, Logger: f.log}
}

// verifyOK fails t unless the whole chain verifies and holds want rows.
func (f *fixture) verifyOK(t testing.TB, want int64) {
	t.Helper()
	res, err := chain.Verify(context.Background(), f.st, f.keys(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Checked != want {
		t.Fatalf("verify = %+v (broken %+v), want ok with %d checked", res, res.FirstBroken, want)
	}
}

type queueRow struct {
	ID        int64      `db:"id"`
	AssetID   *uuid.UUID `db:"asset_id"`
	CID       string     `db:"cid"`
	Status    string     `db:"status"`
	Attempts  int        `db:"attempts"`
	LastError *string    `db:"last_error"`
}

func (f *fixture) queueRows(t testing.TB) []queueRow {
	t.Helper()
	var rows []queueRow
	if err := f.env.DB.SelectContext(context.Background(), &rows,
		`SELECT id, asset_id, cid, status, attempts, last_error FROM attestation_queue ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	return rows
}

func (f *fixture) chainRows(t testing.TB) []store.AttestationRecord {
	t.Helper()
	rows, err := f.st.Attestations(context.Background(), 0, 1<<62, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func (f *fixture) counts(t testing.TB) chain.QueueCounts {
	t.Helper()
	c, err := chain.CountQueue(context.Background(), f.st)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// memLedger is a ledger test double: it keeps what it is given, in memory,
// and fails the transactions fail says to.
type memLedger struct {
	mu    sync.Mutex
	txs   []*chain.Transaction
	delay time.Duration
	fail  func(tx *chain.Transaction) error
}

func (l *memLedger) Publish(ctx context.Context, tx *chain.Transaction) error {
	if l.delay > 0 {
		select {
		case <-time.After(l.delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		if err := l.fail(tx); err != nil {
			return err
		}
	}
	l.txs = append(l.txs, tx)
	return nil
}

func (l *memLedger) published() []*chain.Transaction {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*chain.Transaction(nil), l.txs...)
}

// failCID fails the first times publishes of cid.
func failCID(cid string, times int) func(*chain.Transaction) error {
	n := 0
	return func(tx *chain.Transaction) error {
		if tx.CID == cid && n < times {
			n++
			return errors.New("ledger refused")
		}
		return nil
	}
}

// readLedgerFile parses a file ledger, skipping lines that do not parse.
func readLedgerFile(t testing.TB, path string) []chain.Transaction {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []chain.Transaction
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var tx chain.Transaction
		if json.Unmarshal(sc.Bytes(), &tx) == nil {
			out = append(out, tx)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
