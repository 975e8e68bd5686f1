package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// IngestOutput is what ingest learned from an original.
type IngestOutput struct {
	AssetID         uuid.UUID
	Width, Height   int
	CapturedAt      *time.Time
	CapturedOffset  string
	CameraMake      string
	CameraModel     string
	LensModel       string
	FocalLengthMm   float64
	ShutterSpeed    string
	Aperture        float64
	ISO             int
	GPSLat, GPSLon  *float64
	EXIF            json.RawMessage
	Quality         json.RawMessage
	MetadataWarning string
	PHash           uint64
	HashAlgorithm   string
	Files           []AssetFile
	// Keywords and IPTC (a JSON object) come from the photo's own XMP
	// packet. They fill the asset's only where its owner has set none.
	Keywords []string
	IPTC     json.RawMessage
	// Decision is the rating the photo's XMP packet gives it. It becomes
	// the project owner's rating only if the owner has not rated the
	// photo in Lightbox.
	Decision *XMPDecision
}

// XMPDecision is a rating an editor wrote into a photo's XMP packet.
type XMPDecision struct {
	Rating           int // 1–5, or 0 for none
	Picked, Rejected bool
	ColorLabel       string // one of ColorLabels, or ""
}

// SaveIngest writes everything ingest produced in one transaction, with
// the jobs that follow it when the caller records them in the same one.
// Every write is an upsert, so running ingest twice leaves the same rows;
// the asset moves to 'cull' unless it is already further along.
func (s *Store) SaveIngest(ctx context.Context, out IngestOutput) error {
	err := s.WithTx(ctx, func(tx *Store) error {
		if err := tx.upsertFiles(ctx, out.Files); err != nil {
			return err
		}
		if _, err := tx.db.ExecContext(ctx, `
			INSERT INTO perceptual_hashes (asset_id, algorithm, hash) VALUES ($1, $2, $3)
			ON CONFLICT (asset_id) DO UPDATE SET algorithm = EXCLUDED.algorithm, hash = EXCLUDED.hash, created_at = now()`,
			out.AssetID, out.HashAlgorithm, int64(out.PHash)); err != nil {
			return err
		}
		// A client's capturedAt from prepareUpload stays when the file has
		// none; what a sidecar put before the ingest warned of stays beside
		// the file's own warning.
		_, err := tx.db.ExecContext(ctx, `
			UPDATE assets SET width_px = $2, height_px = $3, captured_at = coalesce($4, captured_at),
				captured_offset = nullif($5, ''), camera_make = nullif($6, ''), camera_model = nullif($7, ''),
				lens_model = nullif($8, ''), focal_length_mm = nullif($9::float8, 0), shutter_speed = nullif($10, ''),
				aperture = nullif($11::float8, 0), iso = nullif($12::int, 0), gps_lat = $13, gps_lon = $14, exif = $15, quality = $16,
				metadata_warning = nullif(concat_ws('; ', nullif($17, ''), substring(metadata_warning from $18)), ''), error_code = NULL, error_message = NULL, ingested_at = now(),
				status = CASE WHEN status IN ('uploaded', 'failed') THEN 'cull' ELSE status END,
				thumbnail_at = coalesce(thumbnail_at, now()), updated_at = now()
			WHERE id = $1`,
			out.AssetID, out.Width, out.Height, out.CapturedAt, out.CapturedOffset, out.CameraMake, out.CameraModel,
			out.LensModel, out.FocalLengthMm, out.ShutterSpeed, out.Aperture, out.ISO, out.GPSLat, out.GPSLon,
			out.EXIF, out.Quality, out.MetadataWarning, sidecarWarningPart)
		if err != nil {
			return err
		}
		if err := tx.saveXMP(ctx, out); err != nil {
			return err
		}
		return tx.linkPair(ctx, out.AssetID)
	})
	return s.duplicateOf(ctx, out.AssetID, err)
}

// LockThumbnail takes an asset's row for a writer of its thumbnail (the
// thumbnail task, or ingest) until tx ends, and says the asset's status
// and whether its thumbnail is made. Each writer puts the thumbnail's
// bytes while it holds the row, so the bytes under the thumbnail's key are
// always those its row describes, whichever writer came last.
func (s *Store) LockThumbnail(ctx context.Context, id uuid.UUID) (status string, made bool, err error) {
	var row struct {
		Status string `db:"status"`
		Made   bool   `db:"made"`
	}
	err = s.db.GetContext(ctx, &row, `SELECT status, thumbnail_at IS NOT NULL AS made FROM assets WHERE id = $1 FOR UPDATE`, id)
	return row.Status, row.Made, notFound(err)
}

// SaveThumbnail records a thumbnail made ahead of its asset's ingest.
func (s *Store) SaveThumbnail(ctx context.Context, f AssetFile) error {
	return s.WithTx(ctx, func(tx *Store) error {
		if err := tx.upsertFiles(ctx, []AssetFile{f}); err != nil {
			return err
		}
		_, err := tx.db.ExecContext(ctx, `UPDATE assets SET thumbnail_at = coalesce(thumbnail_at, now()), updated_at = now()
			WHERE id = $1`, f.AssetID)
		return err
	})
}

// upsertFiles records derived files, replacing each asset's file of the
// same kind.
func (s *Store) upsertFiles(ctx context.Context, files []AssetFile) error {
	for _, f := range files {
		if _, err := s.db.ExecContext(ctx, `
			INSERT INTO asset_files (asset_id, kind, blob_key, content_type, byte_size, checksum_sha256, width_px, height_px)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (asset_id, kind) DO UPDATE SET blob_key = EXCLUDED.blob_key, content_type = EXCLUDED.content_type,
				byte_size = EXCLUDED.byte_size, checksum_sha256 = EXCLUDED.checksum_sha256,
				width_px = EXCLUDED.width_px, height_px = EXCLUDED.height_px, created_at = now()`,
			f.AssetID, f.Kind, f.BlobKey, f.ContentType, f.ByteSize, f.ChecksumSHA256, f.WidthPx, f.HeightPx); err != nil {
			return err
		}
	}
	return nil
}

// saveXMP fills what the photo's XMP packet says where the owner has not
// said otherwise: keywords when the asset has none, IPTC fields the asset
// lacks, and the owner's rating when there is none. Running it again
// changes nothing.
func (s *Store) saveXMP(ctx context.Context, out IngestOutput) error {
	if len(out.Keywords) > 0 || len(out.IPTC) > 0 {
		iptc := out.IPTC
		if len(iptc) == 0 {
			iptc = json.RawMessage(`{}`)
		}
		if _, err := s.db.ExecContext(ctx, `
			UPDATE assets SET keywords = CASE WHEN keywords = '{}' THEN coalesce($2::text[], '{}') ELSE keywords END,
				iptc = $3::jsonb || iptc
			WHERE id = $1`, out.AssetID, pq.Array(out.Keywords), iptc); err != nil {
			return err
		}
	}
	d := out.Decision
	if d == nil || (d.Rating == 0 && !d.Picked && !d.Rejected && d.ColorLabel == "") {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO ratings (asset_id, user_id, rating, picked, rejected, color_label)
		SELECT a.id, p.owner_user_id, nullif($2::int, 0), $3, $4 AND NOT $3, nullif($5, '')
		FROM assets a JOIN projects p ON p.id = a.project_id WHERE a.id = $1
		ON CONFLICT (asset_id, user_id) DO NOTHING`,
		out.AssetID, d.Rating, d.Picked, d.Rejected, d.ColorLabel)
	return err
}
