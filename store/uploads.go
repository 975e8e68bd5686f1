package store

import (
	"context"

	"github.com/google/uuid"
)

// UnrecordedUpload is an asset waiting for its original with no upload
// recorded yet.
type UnrecordedUpload struct {
	ID       uuid.UUID `db:"id"`
	BlobKey  string    `db:"blob_key"`
	ByteSize int64     `db:"byte_size"`
}

// UnrecordedUploads lists the assets among ids in project that wait for
// their original and have no upload recorded. When browsers PUT straight
// to an object store no handler sees the bytes arrive, so finalize looks
// for them in the store and records what it finds.
func (s *Store) UnrecordedUploads(ctx context.Context, project uuid.UUID, ids []uuid.UUID) ([]UnrecordedUpload, error) {
	var out []UnrecordedUpload
	err := s.db.SelectContext(ctx, &out, `
		SELECT id, blob_key, byte_size FROM assets
		WHERE project_id = $1 AND id = ANY($2) AND status = $3 AND checksum_sha256 IS NULL`,
		project, UUIDs(ids), AssetPendingUpload)
	return out, err
}
