package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// NewImport is one URL to fetch into a new asset.
type NewImport struct {
	AssetID  uuid.UUID
	URL      string
	Filename string
	BlobKey  string
}

// AddImports records one asset per URL of an import, waiting for the
// bytes its download job (recorded by the caller) brings.
func (s *Store) AddImports(ctx context.Context, project uuid.UUID, items []NewImport) error {
	assets := make([]NewAsset, len(items))
	for i, it := range items {
		assets[i] = NewAsset{ID: it.AssetID, Filename: it.Filename, ContentType: "application/octet-stream", BlobKey: it.BlobKey}
	}
	// No upload URL expires for these: the worker brings the bytes.
	return s.AddPendingAssets(ctx, project, assets, time.Time{})
}

// RecordDownload stores what a download brought: its size, checksum and
// sniffed content type, while the asset still waits for bytes, unless the
// bytes would pass owner's bytes quota (a *QuotaError). It counts as
// in flight until finalized, and the owner's row is held for the check, so
// two downloads at once cannot both take the last of the quota.
func (s *Store) RecordDownload(ctx context.Context, owner, asset uuid.UUID, sha string, size int64, contentType string, defaults Limits) error {
	return s.WithUsage(ctx, owner, func(tx *Store, u *Usage) error {
		// A download run again (its task retried after it recorded the
		// bytes) counts among the bytes in flight already: not twice.
		var own int64
		if err := tx.db.GetContext(ctx, &own, `
			SELECT coalesce((SELECT byte_size FROM assets WHERE id = $1 AND status = 'pending_upload'
			                 AND upload_expires_at IS NULL AND upload_size IS NOT NULL), 0)`, asset); err != nil {
			return err
		}
		used := u.BytesUsed() - own
		if l := u.Limits(defaults); l.Bytes > 0 && used+size > l.Bytes {
			return &QuotaError{Quota: QuotaBytes, Limit: l.Bytes, Used: used, Requested: size}
		}
		_, err := tx.db.ExecContext(ctx, `
			UPDATE assets SET checksum_sha256 = $2, upload_size = $3, byte_size = $3, content_type = $4, uploaded_at = now(), updated_at = now()
			WHERE id = $1 AND status = 'pending_upload'`, asset, sha, size, contentType)
		return err
	})
}
