package store

import (
	"context"
	"errors"
	"hash/maphash"
	"slices"
	"strings"
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

// DiscardNow makes the discards whose keys begin with prefix due at once,
// and returns their keys: their files are wanted no more, the caller
// deletes them, and the sweeper does what it could not. A discard recorded
// again later (a late writer) is due when that one says.
func (s *Store) DiscardNow(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	err := s.db.SelectContext(ctx, &keys, `UPDATE blob_discards SET url_expires_at = now()
		WHERE starts_with(blob_key, $1) AND url_expires_at > now() RETURNING blob_key`, prefix)
	return keys, err
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

// keyColumns are the columns that name stored files: an asset's original,
// the files made from it, an export's archive, a gallery's watermarked
// preview, and the discards the sweeper already knows. A file none of
// them names is an orphan (`lightbox blobs orphans`).
var keyColumns = [][2]string{
	{"assets", "blob_key"}, {"asset_files", "blob_key"}, {"exports", "blob_key"},
	{"gallery_assets", "watermark_key"}, {"blob_discards", "blob_key"},
}

// namedKeys and unnamed are the queries of keyColumns: every key named,
// and those of $1 that none names.
var namedKeys, unnamed = func() (string, string) {
	named := make([]string, len(keyColumns))
	notNamed := make([]string, len(keyColumns))
	for i, c := range keyColumns {
		named[i] = "SELECT " + c[1] + " FROM " + c[0] + " WHERE " + c[1] + " IS NOT NULL"
		notNamed[i] = "NOT EXISTS (SELECT 1 FROM " + c[0] + " WHERE " + c[1] + " = k)"
	}
	return strings.Join(named, " UNION ALL "),
		"SELECT k FROM unnest($1::text[]) AS k WHERE " + strings.Join(notNamed, " AND ")
}()

// NamedSet is every key some row named when it was read, kept as 64-bit
// hashes: a project of 100,000 photos names 300,000 keys. A collision can
// only make an unnamed key look named, so what Has denies is worth checking
// again with UnnamedKeys or DiscardUnnamed, and nothing named is missed.
type NamedSet struct {
	seed   maphash.Seed
	hashes map[uint64]struct{}
}

// NamedSet reads every key a row names, in one streaming query.
func (s *Store) NamedSet(ctx context.Context) (*NamedSet, error) {
	set := &NamedSet{seed: maphash.MakeSeed(), hashes: map[uint64]struct{}{}}
	rows, err := s.db.QueryContext(ctx, namedKeys)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var key string
	for rows.Next() {
		if err := rows.Scan(&key); err != nil {
			return nil, err
		}
		set.hashes[maphash.String(set.seed, key)] = struct{}{}
	}
	return set, rows.Err()
}

// Has reports whether key was named, or collides with a key that was.
func (n *NamedSet) Has(key string) bool {
	_, ok := n.hashes[maphash.String(n.seed, key)]
	return ok
}

// UnnamedKeys returns, in order, those of keys (objects found in storage)
// that no row names. The key columns have no index, so each call reads
// the tables: meant for the few keys a NamedSet leaves in doubt.
func (s *Store) UnnamedKeys(ctx context.Context, keys []string) ([]string, error) {
	var out []string
	err := s.db.SelectContext(ctx, &out, unnamed+` ORDER BY k`, pq.Array(keys))
	return out, err
}

// DiscardUnnamed records those of keys that no row names as discards due
// since writtenBefore, when the listing found them last written: nothing
// writes them any more, so the sweeper's next run deletes them as it does
// every discard. It returns them in order. The check and the record are
// one statement, so a key named since the listing is left alone.
func (s *Store) DiscardUnnamed(ctx context.Context, keys []string, writtenBefore time.Time) ([]string, error) {
	var out []string
	err := s.db.SelectContext(ctx, &out, `INSERT INTO blob_discards (blob_key, url_expires_at)
		SELECT k, $2 FROM (`+unnamed+`) u
		ON CONFLICT (blob_key) DO NOTHING RETURNING blob_key`, pq.Array(keys), writtenBefore)
	slices.Sort(out)
	return out, err
}
