package worker

import (
	"context"
	"time"

	"github.com/hibiken/asynq"

	"lightbox/tasks"
)

// ledgerBackoff is how long a flush waits after the ledger refused items.
const ledgerBackoff = 5 * time.Second

// flushChain signs and publishes pending attestations until none are left.
// When the ledger refused some, the task comes back after a pause without
// spending a retry: the failed items carry their own attempt counts.
func (w *Worker) flushChain(ctx context.Context, _ *asynq.Task) error {
	res, err := w.flusher.Drain(ctx)
	if err != nil {
		return err
	}
	if res.Signed > 0 {
		w.log.Info("chain flushed", "attested", res.Attested, "failed", res.Failed, "abandoned", res.Abandoned,
			"seq", res.Head.Seq, "ms", res.Duration.Milliseconds())
	}
	if res.More {
		return tasks.RateLimited("ledger", ledgerBackoff)
	}
	return nil
}
