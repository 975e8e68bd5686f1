package chain_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/chain"
	"lightbox/store"
	"lightbox/wait"
)

// ledgerLatency is the remote log's round trip the figures assume.
const ledgerLatency = 50 * time.Millisecond

// slowLedger takes ledgerLatency for every publish, like a remote log.
type slowLedger struct{}

func (slowLedger) Publish(ctx context.Context, tx *chain.Transaction) error {
	return wait.For(ctx, ledgerLatency)
}

// BenchmarkAttest measures attestations per minute end to end, queue rows
// in Postgres to attested rows and a moved head, against a ledger taking
// 50 ms per item. Beside it, from the same run: the signing rate alone
// (the chain signs one item after another) and the ledger's own limit,
// min(batch, concurrency) ÷ latency. The seed design's target was 500/min.
func BenchmarkAttest(b *testing.B) {
	configs := []struct {
		batch, conc, items int
	}{
		{1, 1, 60},     // the seed: one item signed and uploaded at a time
		{50, 50, 5000}, // the design's batch of 50, all published at once
		{500, 128, 20000},
		{chain.DefaultBatchSize, chain.DefaultConcurrency, 20000},
		{1024, 256, 20000},
	}
	for _, c := range configs {
		b.Run(fmt.Sprintf("batch=%d/conc=%d", c.batch, c.conc), func(b *testing.B) {
			f := newFixture(b)
			fl := &chain.Flusher{Store: f.st, Key: f.key, Ledger: slowLedger{}, BatchSize: c.batch, Concurrency: c.conc}
			fl.Logger = slog.New(slog.DiscardHandler)
			var attested int
			var took time.Duration
			for b.Loop() {
				b.StopTimer()
				f.queue(b, c.items)
				b.StartTimer()
				start := time.Now()
				res, err := fl.Drain(context.Background())
				took += time.Since(start)
				if err != nil || res.Attested != c.items {
					b.Fatalf("drain = %+v, %v; want %d attested", res, err, c.items)
				}
				attested += res.Attested
			}
			rate := float64(attested) / took.Minutes()
			sign := signRate(b, f, c.items)
			limit := float64(min(c.batch, c.conc)) / ledgerLatency.Minutes()
			b.ReportMetric(rate, "attest/min")
			b.ReportMetric(sign, "sign/min")
			b.ReportMetric(limit, "ledger-limit/min")
			b.ReportMetric(rate/sign, "of-sign-rate")
			b.ReportMetric(rate/limit, "of-ledger-limit")
			b.ReportMetric(rate/500, "x-seed-target")
		})
	}
}

// signRate is how many items a minute one signer chains, with nothing else
// in the way.
func signRate(b *testing.B, f *fixture, n int) float64 {
	item := store.ClaimedAttestation{ProjectID: f.project, CID: strings.Repeat("ab", 32), Op: "ingest", Visibility: "private",
		TS: time.Now(), Filename: "IMG_0001.JPG", ByteSize: 4 << 20, ContentType: "image/jpeg"}
	id := uuid.New()
	item.AssetID = &id
	prev := chain.Link{}
	start := time.Now()
	for range max(n, 5000) {
		tx, err := chain.Sign(f.key, chain.NewPayload(item, prev))
		if err != nil {
			b.Fatal(err)
		}
		prev = chain.Link{Seq: tx.Seq, TxID: tx.TxID, CID: tx.CID}
	}
	return float64(max(n, 5000)) / time.Since(start).Minutes()
}
