package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// AssetFile is a stored file of an asset: its original or a derived file.
type AssetFile struct {
	AssetID        uuid.UUID `db:"asset_id"`
	Kind           string    `db:"kind"`
	BlobKey        string    `db:"blob_key"`
	ContentType    string    `db:"content_type"`
	ByteSize       int64     `db:"byte_size"`
	ChecksumSHA256 string    `db:"checksum_sha256"`
	WidthPx        *int      `db:"width_px"`
	HeightPx       *int      `db:"height_px"`
	CreatedAt      time.Time `db:"created_at"`
}

// AssetFiles lists an asset's files: the original (once finalized) and
// whatever the pipeline has made.
func (s *Store) AssetFiles(ctx context.Context, asset uuid.UUID) ([]AssetFile, error) {
	var files []AssetFile
	err := s.db.SelectContext(ctx, &files, `
		SELECT a.id AS asset_id, 'original' AS kind, a.blob_key, a.content_type, a.upload_size AS byte_size,
		       a.checksum_sha256, a.width_px, a.height_px, a.created_at
		FROM assets a WHERE a.id = $1 AND a.status NOT IN ('pending_upload', 'duplicate') AND a.checksum_sha256 IS NOT NULL
		UNION ALL
		SELECT asset_id, kind, blob_key, content_type, byte_size, checksum_sha256, width_px, height_px, created_at
		FROM asset_files WHERE asset_id = $1 AND kind <> 'original'
		ORDER BY kind`, asset)
	return files, err
}
