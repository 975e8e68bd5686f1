package store

import (
	"context"
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

// discardAfter notes keys no row will name again but a writer may still
// put back until until, for DueDiscards.
func (s *Store) discardAfter(ctx context.Context, keys []string, until time.Time) error {
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO blob_discards (blob_key, url_expires_at) SELECT unnest($1::text[]), $2
		ON CONFLICT (blob_key) DO UPDATE SET url_expires_at = greatest(blob_discards.url_expires_at, EXCLUDED.url_expires_at)`,
		pq.Array(keys), until)
	return err
}

// DueDiscards lists, oldest first, discarded files (originals finalize
// discarded, files of deleted assets) that nothing could write after
// cutoff: no PUT or late task can bring them back any more, so one last
// delete removes them for good.
func (s *Store) DueDiscards(ctx context.Context, cutoff time.Time, limit int) ([]string, error) {
	var keys []string
	err := s.db.SelectContext(ctx, &keys, `SELECT blob_key FROM blob_discards
		WHERE url_expires_at < $1 ORDER BY url_expires_at LIMIT $2`, cutoff, limit)
	return keys, err
}

// ForgetDiscards drops keys DueDiscards listed once their bytes are gone.
func (s *Store) ForgetDiscards(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM blob_discards WHERE blob_key = ANY($1)`, pq.Array(keys))
	return err
}
