package backup

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // the Postgres driver
)

// blobRef is a stored file a row names, as the snapshot saw it.
type blobRef struct {
	Key  string `db:"key"`
	Kind string `db:"kind"`
	// SHA256 and Size are the row's, when it records them ("" and -1
	// when not): what the file should hold.
	SHA256 string `db:"sha256"`
	Size   int64  `db:"size"`
	// Optional: an upload that may never have arrived, or was discarded.
	Optional bool `db:"optional"`
}

// blobRefs selects every stored file the rows name, in the snapshot; the
// columns are those store's keyColumns lists. Duplicates' and refused
// uploads' originals are discarded at finalize, and an upload that was
// never finalized or failed may have no bytes, hence optional. Export
// parts and discards are left out: they are on their way to deletion or
// into an archive.
func blobRefs(originalsOnly bool) string {
	files := `SELECT blob_key, kind, checksum_sha256, byte_size, false FROM asset_files`
	q := `SELECT blob_key AS key, 'original' AS kind, coalesce(checksum_sha256, '') AS sha256,
			coalesce(upload_size, byte_size) AS size, status IN ('pending_upload', 'failed') AS optional
		FROM assets WHERE status <> 'duplicate' AND (checksum_sha256 IS NOT NULL OR status = 'pending_upload')
		UNION ALL `
	if originalsOnly {
		// A photographer's sidecar cannot be drawn again from the original.
		return q + files + ` WHERE kind = 'xmp_sidecar' ORDER BY 1`
	}
	return q + files + `
		UNION ALL SELECT blob_key, '` + KindExport + `', '', coalesce(byte_size, -1), false FROM exports
			WHERE status = 'done' AND blob_key IS NOT NULL
		UNION ALL SELECT watermark_key, '` + KindGallery + `', '', -1, false FROM gallery_assets
			WHERE watermark_key IS NOT NULL
		ORDER BY 1`
}

// namedNow says whether any row names key now, outside the snapshot.
const namedNow = `SELECT EXISTS (SELECT 1 FROM assets WHERE blob_key = $1 AND status <> 'duplicate')
	OR EXISTS (SELECT 1 FROM asset_files WHERE blob_key = $1)
	OR EXISTS (SELECT 1 FROM exports WHERE blob_key = $1 AND status = 'done')
	OR EXISTS (SELECT 1 FROM gallery_assets WHERE watermark_key = $1)`

// snapshot is a read-only transaction whose view of the database pg_dump
// shares (pg_export_snapshot), so the dump and the list of files it names
// are of the same moment. It must stay open until pg_dump has started.
type snapshot struct {
	db *sqlx.DB
	tx *sqlx.Tx
	ID string
}

func openSnapshot(ctx context.Context, dsn string) (*snapshot, error) {
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(2)
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	s := &snapshot{db: db, tx: tx}
	if err := tx.GetContext(ctx, &s.ID, `SELECT pg_export_snapshot()`); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// End ends the snapshot, once pg_dump is done with it: a long copy of
// the files must not hold back the database's vacuum.
func (s *snapshot) End() { s.tx.Rollback() }

func (s *snapshot) Close() {
	s.tx.Rollback()
	s.db.Close()
}

// namedNow says whether a row names key now, outside the snapshot.
func (s *snapshot) namedNow(ctx context.Context, key string) (bool, error) {
	var named bool
	err := s.db.GetContext(ctx, &named, namedNow, key)
	return named, err
}

// facts reads the schema version and the chain head.
func (s *snapshot) facts(ctx context.Context) (schema int, head ChainHead, err error) {
	if err = s.tx.GetContext(ctx, &schema, `SELECT coalesce(max(version), 0) FROM schema_migrations`); err != nil {
		return 0, head, fmt.Errorf("schema version: %w", err)
	}
	err = s.tx.QueryRowxContext(ctx, `SELECT seq, tx_id, cid FROM chain_head`).Scan(&head.Seq, &head.TxID, &head.CID)
	if err != nil {
		return 0, head, fmt.Errorf("chain head: %w", err)
	}
	return schema, head, nil
}

func (s *snapshot) refs(ctx context.Context, originalsOnly bool) ([]blobRef, error) {
	var refs []blobRef
	if err := s.tx.SelectContext(ctx, &refs, blobRefs(originalsOnly)); err != nil {
		return nil, fmt.Errorf("list stored files: %w", err)
	}
	return refs, nil
}
