package worker

import (
	"context"
	"time"

	"github.com/hibiken/asynq"

	"lightbox/tasks"
)

// ledgerBackoff is how long a flush waits after the ledger refused items;
// while the ledger is down it doubles with each flush that finds it so, up
// to maxLedgerBackoff: a flush every 20 s costs a down ledger one request,
// and the chain moves again within 20 s of its return.
const (
	ledgerBackoff    = 5 * time.Second
	maxLedgerBackoff = 20 * time.Second
)

func init() { handle(tasks.TypeChainFlush, (*Worker).flushChain) }

// flushChain signs and publishes pending attestations until none are left.
// When the ledger refused some, the task comes back after a pause without
// spending a retry: the failed items carry their own attempt counts. When
// the ledger was down, no item is charged and the pause grows.
func (w *Worker) flushChain(ctx context.Context, _ *asynq.Task) error {
	res, err := w.flusher.Drain(ctx)
	if err != nil {
		return err
	}
	if res.Signed > 0 {
		w.log.Info("chain flushed", "attested", res.Attested, "failed", res.Failed, "abandoned", res.Abandoned,
			"seq", res.Head.Seq, "ms", res.Duration.Milliseconds())
	}
	wait := ledgerBackoff
	if res.Outage {
		n := w.ledgerOutages.Add(1)
		wait = min(ledgerBackoff<<min(n-1, 10), maxLedgerBackoff)
		w.log.Warn("chain: the ledger is down; flushing backs off", "wait", wait)
	} else {
		w.ledgerOutages.Store(0)
	}
	if res.More {
		return tasks.RateLimited("ledger", wait)
	}
	return nil
}
