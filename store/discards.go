package store

import (
	"context"
	"errors"
	"time"

	"github.com/lib/pq"
)

// recordDiscards notes the originals of assets that finalize discarded
// (keys), each with its upload URL's expiry (now for an asset that had
// none, such as a URL import), for DueDiscards.
func (s *Store) recordDiscards(ctx context.Context, assets []lockedAsset, keys []string) error {
	gone := make(map[string]bool, len(keys))
	for _, k := range keys {
		gone[k] = true
	}
	var discarded []string
	var expires []time.Time
	for _, a := range assets {
		if !gone[a.BlobKey] {
			continue
		}
		at := time.Now()
		if a.URLExpires != nil {
			at = *a.URLExpires
		}
		discarded, expires = append(discarded, a.BlobKey), append(expires, at)
	}
	if len(discarded) == 0 {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO blob_discards (blob_key, url_expires_at)
		SELECT key, expires FROM unnest($1::text[], $2::timestamptz[]) AS d(key, expires)
		ON CONFLICT (blob_key) DO NOTHING`, pq.Array(discarded), pq.Array(expires))
	return err
}

// ErrDiscardDue answers a write that would have a row name a file whose
// discard is due or gone: the sweeper may be deleting it, so the write
// changed nothing and the file stays discarded.
var ErrDiscardDue = errors.New("store: the file's discard is due")

// DiscardAfter notes keys no row names (any more, or yet) but a writer may
// still put back until until, for DueDiscards. A task records the key it
// is about to write so, should it die before a row names the file, the
// sweeper deletes it.
func (s *Store) DiscardAfter(ctx context.Context, keys []string, until time.Time) error {
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO blob_discards (blob_key, url_expires_at) SELECT unnest($1::text[]), $2
		ON CONFLICT (blob_key) DO UPDATE SET url_expires_at = greatest(blob_discards.url_expires_at, EXCLUDED.url_expires_at)`,
		pq.Array(keys), until)
	return err
}

// DueDiscards takes, oldest first, discarded files (originals finalize
// discarded, files of deleted assets, files tasks wrote that no row came
// to name) that nothing could write after cutoff: no PUT or late task can
// bring them back any more, so one last delete removes them for good.
//
// Each key taken is marked due for good (-infinity) in the same statement,
// under the rows' locks, so claimDiscard can no longer have a row name it
// whatever the clocks: cutoff is the sweeper's, claimDiscard's is
// Postgres's, and a claim under way is waited for (its key, gone, is not
// taken).
func (s *Store) DueDiscards(ctx context.Context, cutoff time.Time, limit int) ([]string, error) {
	var keys []string
	err := s.db.SelectContext(ctx, &keys, `UPDATE blob_discards SET url_expires_at = '-infinity'
		WHERE blob_key IN (SELECT blob_key FROM blob_discards WHERE url_expires_at < $1
			ORDER BY url_expires_at LIMIT $2 FOR UPDATE)
		RETURNING blob_key`, cutoff, limit)
	return keys, err
}

// ForgetDiscards drops keys DueDiscards listed before cutoff once their
// bytes are gone. A key discarded again since, due later, stays: its
// writer may have put it back after the delete.
func (s *Store) ForgetDiscards(ctx context.Context, keys []string, cutoff time.Time) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM blob_discards WHERE blob_key = ANY($1) AND url_expires_at < $2`,
		pq.Array(keys), cutoff)
	return err
}

// claimDiscard drops key's discard in the transaction that has a row name
// it, so the sweeper never deletes a named file. ErrDiscardDue when the
// discard is due or gone: the sweeper may have listed it already.
func (s *Store) claimDiscard(ctx context.Context, key string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM blob_discards WHERE blob_key = $1 AND url_expires_at > now()`, key)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrDiscardDue
	}
	return nil
}
