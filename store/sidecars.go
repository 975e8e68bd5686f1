package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
)

// KindXMPSidecar is the asset_files kind of an asset's XMP sidecar.
const KindXMPSidecar = "xmp_sidecar"

// sidecarWarning is the label of the part of an asset's metadata
// warning that its sidecar wrote; a later sidecar replaces that part and
// leaves the rest (the original's own) as it is.
const sidecarWarning = "XMP sidecar: "

// sidecarWarningPart matches the sidecar's part of a metadata warning,
// which always comes last.
const sidecarWarningPart = sidecarWarning + ".*$"

// SidecarOutput is what an asset's XMP sidecar says, to be saved with the
// sidecar's bytes (File, already stored).
type SidecarOutput struct {
	AssetID  uuid.UUID
	File     AssetFile
	Keywords []string
	IPTC     json.RawMessage
	Decision *XMPDecision
	// Warning names values the sidecar holds out of range; "" clears the
	// one an earlier sidecar left.
	Warning string
}

// LockAssetForSidecar takes owner's asset's row until tx ends, so the
// sidecar's bytes, its file row and the decisions read from it are those
// of the same PUT when two race. It returns the asset's project.
func (s *Store) LockAssetForSidecar(ctx context.Context, owner, asset uuid.UUID) (uuid.UUID, error) {
	var project uuid.UUID
	err := s.db.GetContext(ctx, &project, `SELECT a.project_id FROM assets a JOIN projects p ON p.id = a.project_id
		WHERE a.id = $1 AND p.owner_user_id = $2 FOR UPDATE OF a`, asset, owner)
	return project, notFound(err)
}

// SaveSidecar records an asset's sidecar and applies what it says, as
// ingest applies the photo's own packet (saveXMP): keywords and IPTC
// captions fill what the asset lacks. Its decision becomes the owner's
// rating unless the owner decided by hand; a decision the assistant, the
// photo's own packet (written by the ingest, so changed when the asset was
// ingested) or an earlier sidecar wrote is no hand decision, and is
// replaced. Ingest, after, inserts the embedded packet's decision only
// where the owner has no rating row, so the sidecar's stays. It reports
// whether a hand decision was kept. Saving the same sidecar again changes
// nothing.
func (s *Store) SaveSidecar(ctx context.Context, out SidecarOutput) (handKept bool, err error) {
	err = s.WithTx(ctx, func(tx *Store) error {
		if err := tx.upsertFiles(ctx, []AssetFile{out.File}); err != nil {
			return err
		}
		if err := tx.setSidecarWarning(ctx, out.AssetID, out.Warning); err != nil {
			return err
		}
		if err := tx.saveXMP(ctx, IngestOutput{AssetID: out.AssetID, Keywords: out.Keywords, IPTC: out.IPTC}); err != nil {
			return err
		}
		d := out.Decision
		if d == nil || (d.Rating == 0 && !d.Picked && !d.Rejected && d.ColorLabel == "") {
			return nil
		}
		res, err := tx.db.ExecContext(ctx, `
			WITH rated AS (
				INSERT INTO ratings AS r (asset_id, user_id, rating, picked, rejected, color_label)
				SELECT a.id, p.owner_user_id, nullif($2::int, 0), $3, $4 AND NOT $3, nullif($5, '')
				FROM assets a JOIN projects p ON p.id = a.project_id WHERE a.id = $1
				ON CONFLICT (asset_id, user_id) DO UPDATE SET rating = EXCLUDED.rating, picked = EXCLUDED.picked,
					rejected = EXCLUDED.rejected, color_label = EXCLUDED.color_label, assisted = false, updated_at = now()
				WHERE NOT `+handDecisionSQL+`
					OR r.updated_at = (SELECT ingested_at FROM assets WHERE id = $1)
					OR r.updated_at = (SELECT sidecar_rated_at FROM assets WHERE id = $1)
				RETURNING r.asset_id)
			UPDATE assets SET sidecar_rated_at = now() WHERE id IN (SELECT asset_id FROM rated)`,
			out.AssetID, d.Rating, d.Picked, d.Rejected, d.ColorLabel)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		handKept = n == 0
		return err
	})
	return handKept, err
}

// SetSidecarWarning sets the sidecar's part of an asset's metadata
// warning, as when its sidecar was refused.
func (s *Store) SetSidecarWarning(ctx context.Context, asset uuid.UUID, warning string) error {
	return s.setSidecarWarning(ctx, asset, warning)
}

func (s *Store) setSidecarWarning(ctx context.Context, asset uuid.UUID, warning string) error {
	_, err := s.db.ExecContext(ctx, `
		UPDATE assets a SET metadata_warning = w.text, updated_at = now()
		FROM (SELECT id, nullif(concat_ws('; ',
				nullif(regexp_replace(coalesce(metadata_warning, ''), '(; )?' || $3 || '.*$', ''), ''),
				$3 || nullif($2, '')), '') AS text
			FROM assets WHERE id = $1) w
		WHERE a.id = w.id AND a.metadata_warning IS DISTINCT FROM w.text`, asset, warning, sidecarWarning)
	return err
}

// ErrNoSidecar is the error of an asset without a sidecar.
var ErrNoSidecar = errors.New("store: the asset has no XMP sidecar")

// Sidecar returns the file row of an asset's sidecar, or ErrNoSidecar.
func (s *Store) Sidecar(ctx context.Context, asset uuid.UUID) (*AssetFile, error) {
	f := &AssetFile{}
	err := s.db.GetContext(ctx, f, `SELECT asset_id, kind, blob_key, content_type, byte_size, checksum_sha256,
		width_px, height_px, created_at FROM asset_files WHERE asset_id = $1 AND kind = $2`, asset, KindXMPSidecar)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoSidecar
	}
	return f, err
}
