package store

import "context"

// Purged counts what PurgeExpired removed.
type Purged struct {
	IdempotencyKeys int64
	Sessions        int64
}

// PurgeExpired deletes idempotency keys older than IdempotencyWindow (a
// repeat would no longer replay them) and sessions that have ended, by
// expiry or by their key's revocation. Both tables otherwise only grow.
func (s *Store) PurgeExpired(ctx context.Context) (Purged, error) {
	var p Purged
	res, err := s.db.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE created_at < now() - $1::interval`, IdempotencyWindow.String())
	if err != nil {
		return p, err
	}
	p.IdempotencyKeys, _ = res.RowsAffected()
	res, err = s.db.ExecContext(ctx, `DELETE FROM sessions s WHERE s.expires_at < now()
		OR EXISTS (SELECT 1 FROM api_keys k WHERE k.id = s.api_key_id AND k.revoked_at IS NOT NULL)`)
	if err != nil {
		return p, err
	}
	p.Sessions, _ = res.RowsAffected()
	return p, nil
}
