package store

import "context"

// Purged counts what PurgeExpired removed.
type Purged struct {
	IdempotencyKeys int64
	Sessions        int64 // browser sessions and access tokens
	SignIns         int64 // sign-in challenges and refresh tokens
	Viewers         int64 // gallery viewer tokens that ended with no favourites
}

// PurgeExpired deletes idempotency keys older than IdempotencyWindow (a
// repeat would no longer replay them) and sessions that have ended, by
// expiry or by their key's revocation, with spent sign-in challenges and
// refresh tokens, and expired gallery viewers who left no favourites (the
// favourites a viewer marked are the owner's to read, so those viewers
// stay; their comments outlive them either way). These tables otherwise
// only grow.
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
	for _, q := range []string{
		`DELETE FROM sign_in_challenges WHERE expires_at < now()`,
		`DELETE FROM refresh_tokens WHERE expires_at < now()`,
	} {
		res, err = s.db.ExecContext(ctx, q)
		if err != nil {
			return p, err
		}
		n, _ := res.RowsAffected()
		p.SignIns += n
	}
	res, err = s.db.ExecContext(ctx, `DELETE FROM gallery_viewers v WHERE v.expires_at < now()
		AND NOT EXISTS (SELECT 1 FROM gallery_favorites f WHERE f.viewer_id = v.id)`)
	if err != nil {
		return p, err
	}
	p.Viewers, _ = res.RowsAffected()
	return p, nil
}
