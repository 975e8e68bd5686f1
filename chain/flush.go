package chain

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"lightbox/store"
)

// Defaults of a Flusher, and the queue's limits.
//
// A batch publishes in ceil(BatchSize/Concurrency) round trips of the
// ledger, so the ledger bounds a flusher at Concurrency ÷ latency items a
// second, less the Postgres work of each batch. At 50 ms a round trip, a
// batch of 50 tops out at 60,000 a minute; 512 items in two round trips of
// 256 measure about 200,000 (see BenchmarkAttest).
const (
	DefaultBatchSize   = 512
	DefaultConcurrency = 256
	DefaultItemTimeout = 10 * time.Second

	// MaxAttempts failed publishes abandon an item.
	MaxAttempts = 5
	// StaleAfter is how long an item may sit in signing before the sweeper
	// decides its flusher died (ReleaseStale).
	StaleAfter = 10 * time.Minute
	// maxHold bounds one flush, lock to commit, well inside StaleAfter so
	// a live flusher's items are never released under it.
	maxHold = 5 * time.Minute
	// commitGrace is kept back from maxHold for the commit itself.
	commitGrace = 30 * time.Second
)

// Flusher signs and publishes queued attestations. Zero fields take the
// defaults above. Any number of Flushers, in any processes, may run at once:
// the chain head lock makes them take turns.
type Flusher struct {
	Store       *store.Store
	Key         ed25519.PrivateKey
	Ledger      Ledger
	BatchSize   int           // items signed per flush
	Concurrency int           // publishes in flight at once
	ItemTimeout time.Duration // the longest one publish may take
	Logger      *slog.Logger
}

// FlushResult says what one or more flushes did.
type FlushResult struct {
	Signed    int  // items signed
	Attested  int  // items now in the chain
	Failed    int  // items whose own failure counted an attempt
	Abandoned int  // of those, items that reached MaxAttempts
	Requeued  int  // items back to pending, to be signed again, no attempt counted
	Head      Head // the head afterwards
	// More says claimable items remain: the caller should flush again
	// (after a backoff when Failed > 0).
	More     bool
	Duration time.Duration
	// Outage says the ledger was down as a whole: the item that met it
	// went back uncharged, and the caller should back off.
	Outage bool
}

func (r *FlushResult) add(o FlushResult) {
	r.Signed += o.Signed
	r.Attested += o.Attested
	r.Failed += o.Failed
	r.Abandoned += o.Abandoned
	r.Requeued += o.Requeued
	r.Head, r.More, r.Outage = o.Head, o.More, o.Outage
	r.Duration += o.Duration
}

// errNotTried marks items not published because one before them failed:
// they would have been discarded anyway.
var errNotTried = errors.New("not published: an earlier item failed")

// errNothingClaimed ends a flush that found no work, rolling back its lock.
var errNothingClaimed = errors.New("nothing to attest")

// Drain flushes until nothing is claimable, stopping early after a flush
// that did not attest all it signed (let the caller back off) or on error.
func (f *Flusher) Drain(ctx context.Context) (FlushResult, error) {
	var total FlushResult
	for {
		r, err := f.Flush(ctx)
		total.add(r)
		if err != nil || !r.More || r.Signed == 0 || r.Attested < r.Signed || ctx.Err() != nil {
			return total, err
		}
	}
}

// Flush runs one batch: lock the head, claim, sign, publish, commit the
// published prefix.
func (f *Flusher) Flush(ctx context.Context) (FlushResult, error) {
	start := time.Now()
	var res FlushResult
	if len(f.Key) != ed25519.PrivateKeySize {
		return res, errorf(CodeInvalidKey, "the flusher has no Ed25519 signing key")
	}
	if f.Ledger == nil {
		return res, errorf(CodeInvalidLedger, "the flusher has no ledger")
	}
	batch, conc, timeout := f.BatchSize, f.Concurrency, f.ItemTimeout
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	if timeout <= 0 {
		timeout = DefaultItemTimeout
	}
	log := f.Logger
	if log == nil {
		log = slog.Default()
	}

	// The transaction holding the head lock outlives a cancelled ctx, so a
	// prefix that did publish is still committed; it has its own deadline.
	txCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxHold)
	defer cancel()
	var (
		h          store.ChainHead
		items      []store.ClaimedAttestation
		txs        []*Transaction
		errs       []error
		k          int // the published prefix is items[:k]
		c          store.ChainCommit
		abandoned  bool
		committing bool
	)
	err := f.Store.WithTx(txCtx, func(tx *store.Store) error {
		var err error
		if h, err = tx.LockChainHead(ctx); err != nil {
			return fmt.Errorf("lock chain head: %w", err)
		}
		// Claimed outside tx: the claim commits at once.
		if items, err = f.Store.ClaimAttestations(ctx, batch); err != nil {
			return fmt.Errorf("claim attestations: %w", err)
		}
		if len(items) == 0 {
			return errNothingClaimed
		}

		pubCtx, cancelPub := context.WithTimeout(ctx, maxHold-commitGrace)
		txs, errs = f.signAndPublish(pubCtx, conc, timeout, Link{Seq: h.Seq, TxID: h.TxID, CID: h.CID}, items)
		interrupted := pubCtx.Err() != nil
		cancelPub()

		k = len(items)
		for i, err := range errs {
			if err != nil {
				k = i
				break
			}
		}
		c = store.ChainCommit{PrevSeq: h.Seq, MaxAttempts: MaxAttempts}
		for i, t := range txs[:k] {
			c.Attested = append(c.Attested, store.AttestationRecord{
				Seq: t.Seq, QueueID: items[i].ID, AssetID: items[i].AssetID, CID: t.CID,
				TxID: t.TxID, PrevTx: t.PrevTx, PrevCID: t.PrevCID, Payload: t.Payload, Signature: t.Signature, PublicKey: t.PublicKey,
			})
		}
		if k < len(items) {
			// A shutdown, a deadline or an outage is not the item's fault.
			res.Outage = !interrupted && ledgerWasDown(errs, k)
			if interrupted || res.Outage {
				c.Requeued = append(c.Requeued, store.Requeue{QueueID: items[k].ID, Err: errs[k].Error()})
			} else {
				c.Failed = &store.Requeue{QueueID: items[k].ID, Err: errs[k].Error()}
			}
			for i := k + 1; i < len(items); i++ {
				r := store.Requeue{QueueID: items[i].ID}
				if errs[i] != nil && !errors.Is(errs[i], errNotTried) {
					r.Err = errs[i].Error()
				}
				c.Requeued = append(c.Requeued, r)
			}
		}
		c.BatchMs = float64(time.Since(start).Microseconds()) / 1000

		committing = true
		abandoned, err = tx.CommitChainBatch(txCtx, c)
		return err
	})
	switch {
	case errors.Is(err, errNothingClaimed):
		res.Head = headOf(h)
		res.Duration = time.Since(start)
		return res, nil
	case err != nil && committing:
		// Give the claim back now rather than after StaleAfter. Items whose
		// commit did land (an answer lost on the wire) are attested and
		// stay so.
		ids := make([]int64, len(items))
		for i, it := range items {
			ids[i] = it.ID
		}
		if uerr := f.Store.UnclaimAttestations(txCtx, ids); uerr != nil {
			log.Warn("chain: return claimed items", "err", uerr)
		}
		return res, fmt.Errorf("commit chain batch: %w", err)
	case err != nil:
		return res, err
	}

	res.Signed, res.Attested, res.Requeued = len(txs), k, len(c.Requeued)
	if c.Failed != nil {
		res.Failed = 1
		if abandoned {
			res.Abandoned = 1
		}
	}
	res.Duration = time.Since(start)
	if res.Head, err = ReadHead(txCtx, f.Store); err != nil {
		return res, err
	}
	if res.More, err = f.Store.HasClaimableAttestations(txCtx); err != nil {
		return res, err
	}
	attrs := []any{"signed", res.Signed, "attested", res.Attested, "head", res.Head.Seq, "ms", c.BatchMs}
	if k < len(items) {
		log.Warn("chain: batch cut short", append(attrs, "failed_seq", h.Seq+int64(k)+1, "err", errs[k],
			"outage", res.Outage, "abandoned", abandoned)...)
	} else {
		log.Info("chain: batch attested", attrs...)
	}
	return res, nil
}

// ledgerWasDown tells an outage from an item the ledger refused: the
// first failure, errs[k], says the ledger was unavailable, and no item
// after it published, so the ledger did not come back meanwhile.
func ledgerWasDown(errs []error, k int) bool {
	if !errors.Is(errs[k], ErrLedgerDown) && !errors.Is(errs[k], context.DeadlineExceeded) {
		return false
	}
	for _, err := range errs[k+1:] {
		if err == nil {
			return false
		}
	}
	return true
}

// signAndPublish signs items in order, from prev, and publishes each as soon
// as it is signed, up to conc at once. errs[i] is item i's failure; after
// the first failure nothing more is signed or dispatched. txs holds the
// signed prefix.
func (f *Flusher) signAndPublish(ctx context.Context, conc int, timeout time.Duration, prev Link, items []store.ClaimedAttestation) (txs []*Transaction, errs []error) {
	errs = make([]error, len(items))
	var cut atomic.Int64 // index of the first failure so far
	cut.Store(int64(len(items)))
	fail := func(i int, err error) {
		errs[i] = err
		for {
			c := cut.Load()
			if int64(i) >= c || cut.CompareAndSwap(c, int64(i)) {
				return
			}
		}
	}
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for i, item := range items {
		if int64(i) > cut.Load() {
			errs[i] = errNotTried
			continue
		}
		tx, err := Sign(f.Key, NewPayload(item, prev))
		if err != nil {
			fail(i, fmt.Errorf("sign: %w", err))
			continue
		}
		txs = append(txs, tx)
		prev = Link{Seq: tx.Seq, TxID: tx.TxID, CID: tx.CID}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			fail(i, ctx.Err())
			continue
		}
		if int64(i) > cut.Load() {
			<-sem
			errs[i] = errNotTried
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ictx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if err := f.Ledger.Publish(ictx, tx); err != nil {
				fail(i, fmt.Errorf("publish seq %d: %w", tx.Seq, err))
			}
		}()
	}
	wg.Wait()
	return txs, errs
}

// ReleaseStale returns items left in signing longer than olderThan (use
// StaleAfter) to pending; the periodic sweeper calls it. It reports how
// many it released.
func ReleaseStale(ctx context.Context, st *store.Store, olderThan time.Duration) (int64, error) {
	return st.ReleaseStaleAttestations(ctx, olderThan)
}
