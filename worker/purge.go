package worker

import "context"

// purgeExpired deletes idempotency keys, sessions and gallery viewers past
// their lifetime, which nothing else removes.
func (w *Worker) purgeExpired(ctx context.Context) error {
	p, err := w.st.PurgeExpired(ctx)
	if p.IdempotencyKeys+p.Sessions+p.SignIns+p.Viewers > 0 {
		w.log.Info("sweep purged expired rows", "idempotencyKeys", p.IdempotencyKeys, "sessions", p.Sessions, "signIns", p.SignIns,
			"galleryViewers", p.Viewers)
	}
	return err
}
