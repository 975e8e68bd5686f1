package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// Asset is one original and what was learned from it.
type Asset struct {
	ID              uuid.UUID       `db:"id"`
	ProjectID       uuid.UUID       `db:"project_id"`
	ClientFileID    *string         `db:"client_file_id"`
	Filename        string          `db:"filename"`
	ContentType     string          `db:"content_type"`
	ByteSize        int64           `db:"byte_size"`
	BlobKey         string          `db:"blob_key"`
	ChecksumSHA256  *string         `db:"checksum_sha256"`
	UploadSize      *int64          `db:"upload_size"`
	UploadedAt      *time.Time      `db:"uploaded_at"`
	Status          string          `db:"status"`
	DuplicateOf     *uuid.UUID      `db:"duplicate_of"`
	UploadExpiresAt *time.Time      `db:"upload_expires_at"`
	FinalizedAt     *time.Time      `db:"finalized_at"`
	CapturedAt      *time.Time      `db:"captured_at"`
	CapturedOffset  *string         `db:"captured_offset"`
	IngestedAt      *time.Time      `db:"ingested_at"`
	WidthPx         *int            `db:"width_px"`
	HeightPx        *int            `db:"height_px"`
	CameraMake      *string         `db:"camera_make"`
	CameraModel     *string         `db:"camera_model"`
	LensModel       *string         `db:"lens_model"`
	FocalLengthMm   *float64        `db:"focal_length_mm"`
	ShutterSpeed    *string         `db:"shutter_speed"`
	Aperture        *float64        `db:"aperture"`
	ISO             *int            `db:"iso"`
	GPSLat          *float64        `db:"gps_lat"`
	GPSLon          *float64        `db:"gps_lon"`
	EXIF            json.RawMessage `db:"exif"`
	Quality         json.RawMessage `db:"quality"`
	MetadataWarning *string         `db:"metadata_warning"`
	ErrorCode       *string         `db:"error_code"`
	ErrorMessage    *string         `db:"error_message"`
	Keywords        Strings         `db:"keywords"`
	Notes           string          `db:"notes"`
	IPTC            json.RawMessage `db:"iptc"`
	UserFlags       json.RawMessage `db:"user_flags"`   // the app's own flags, beside the service's
	Edited          bool            `db:"edited"`       // has an edit version
	ThumbnailAt     *time.Time      `db:"thumbnail_at"` // when its thumbnail was first made
	CreatedAt       time.Time       `db:"created_at"`
	UpdatedAt       time.Time       `db:"updated_at"`
	// PairAssetID is the other half of a RAW+JPEG pair: the camera wrote
	// both files of one shot.
	PairAssetID *uuid.UUID `db:"pair_asset_id"`
}

// Asset states.
const (
	AssetPendingUpload = "pending_upload"
	AssetUploaded      = "uploaded"
	AssetCull          = "cull"
	AssetSearch        = "search"
	AssetAI            = "ai"
	AssetFailed        = "failed"
	AssetDuplicate     = "duplicate"
)

// HasOriginal reports whether the asset holds bytes of its own to process
// or edit: an upload not finalized (or expired) has none, a duplicate's
// were let go for the original's, and so were those of an upload whose
// checksum did not match at finalize.
func (a *Asset) HasOriginal() bool {
	return a.ChecksumSHA256 != nil && a.Status != AssetPendingUpload && a.Status != AssetDuplicate &&
		(a.Status != AssetFailed || a.ErrorCode == nil || *a.ErrorCode != "checksum_mismatch")
}

// NoOriginalError names the assets of a request that have no original to
// work from (see Asset.HasOriginal).
type NoOriginalError struct{ IDs []uuid.UUID }

func (e *NoOriginalError) Error() string { return "store: assets without an original" }

// withoutOriginal returns those of ids that fail Asset.HasOriginal, in the
// order given.
func (s *Store) withoutOriginal(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
	var out []uuid.UUID
	err := s.db.SelectContext(ctx, &out, `
		SELECT a.id FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, n) JOIN assets a ON a.id = u.id
		WHERE a.checksum_sha256 IS NULL OR a.status IN ('pending_upload', 'duplicate')
		   OR (a.status = 'failed' AND a.error_code = 'checksum_mismatch')
		ORDER BY u.n`, pq.Array(ids))
	return out, err
}

// NewAsset is a file a client is about to upload.
type NewAsset struct {
	ID           uuid.UUID
	ClientFileID *string
	Filename     string
	ContentType  string
	ByteSize     int64
	BlobKey      string
	CapturedAt   *time.Time
}

// AddPendingAssets records files about to be uploaded, in one statement; a
// zero expires means no upload URL was handed out.
func (s *Store) AddPendingAssets(ctx context.Context, project uuid.UUID, files []NewAsset, expires time.Time) error {
	n := len(files)
	ids, names, types, keys := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	clientIDs, captured := make([]*string, n), make([]*time.Time, n)
	sizes := make([]int64, n)
	for i, f := range files {
		ids[i], names[i], types[i], keys[i] = f.ID.String(), f.Filename, f.ContentType, f.BlobKey
		clientIDs[i], captured[i], sizes[i] = f.ClientFileID, f.CapturedAt, f.ByteSize
	}
	var exp *time.Time
	if !expires.IsZero() {
		exp = &expires
	}
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO assets (id, project_id, client_file_id, filename, content_type, byte_size, blob_key, captured_at, upload_expires_at)
		SELECT u.id, $1, u.client_id, u.name, u.type, u.size, u.key, u.captured, $2
		FROM unnest($3::uuid[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::timestamptz[])
			AS u(id, client_id, name, type, size, key, captured)`,
		project, exp, pq.Array(ids), pq.Array(clientIDs), pq.Array(names), pq.Array(types),
		pq.Array(sizes), pq.Array(keys), pq.Array(captured))
	return err
}

const assetColumns = `a.id, a.project_id, a.client_file_id, a.filename, a.content_type, a.byte_size, a.blob_key,
	a.checksum_sha256, a.upload_size, a.uploaded_at, a.status, a.duplicate_of, a.upload_expires_at, a.finalized_at,
	a.captured_at, a.captured_offset, a.ingested_at, a.width_px, a.height_px, a.camera_make, a.camera_model,
	a.lens_model, a.focal_length_mm, a.shutter_speed, a.aperture, a.iso, a.gps_lat, a.gps_lon, a.exif, a.quality,
	a.metadata_warning, a.error_code, a.error_message, a.keywords, a.notes, a.iptc, a.user_flags, a.created_at, a.updated_at,
	a.thumbnail_at, a.pair_asset_id, EXISTS (SELECT 1 FROM edit_versions e WHERE e.asset_id = a.id) AS edited`

// AssetByID returns an asset whatever its owner; for the worker and uploads.
func (s *Store) AssetByID(ctx context.Context, id uuid.UUID) (*Asset, error) {
	a := &Asset{}
	err := s.db.GetContext(ctx, a, `SELECT `+assetColumns+` FROM assets a WHERE a.id = $1`, id)
	return a, notFound(err)
}

// Asset returns owner's asset id.
func (s *Store) Asset(ctx context.Context, owner, id uuid.UUID) (*Asset, error) {
	a := &Asset{}
	err := s.db.GetContext(ctx, a, `SELECT `+assetColumns+`
		FROM assets a JOIN projects p ON p.id = a.project_id
		WHERE a.id = $1 AND p.owner_user_id = $2`, id, owner)
	return a, notFound(err)
}

// AssetFilter narrows a list of assets by one person's ratings and by
// what the photos are, and orders it; zero fields do not filter.
type AssetFilter struct {
	User      uuid.UUID
	Picked    *bool
	Rejected  *bool
	RatingMin *int
	Camera    string     // a part of the camera's make and model, any case
	From, To  *time.Time // capture time, both ends included
	Statuses  []string   // asset states; all when empty
	// EyesClosed and FaceOutOfFocus keep the photos where some face has
	// its eyes closed, or is out of focus (true), or none has (false).
	EyesClosed     *bool
	FaceOutOfFocus *bool
	Order          AssetOrder

	// ColorLabels keeps the assets with one of these labels (NoColorLabel:
	// without one); all when empty.
	ColorLabels []string

	// ClientFavorite keeps the assets a visitor of a gallery favourited:
	// in that gallery, or in any gallery of the project when it is
	// uuid.Nil; nil does not filter.
	ClientFavorite *uuid.UUID
}

// clientFavoriteSQL is the condition of a ClientFavorite filter, the
// filter's parameter named param, on the asset and project columns given.
func clientFavoriteSQL(param, asset, project string) string {
	return ` AND (` + param + `::uuid IS NULL OR EXISTS (SELECT 1 FROM gallery_favorites cf JOIN galleries cg ON cg.id = cf.gallery_id
		WHERE cf.asset_id = ` + asset + ` AND cg.project_id = ` + project + `
		  AND (` + param + ` = '00000000-0000-0000-0000-000000000000' OR cf.gallery_id = ` + param + `)))`
}

// AssetOrder is the order of a list of assets; ties go by id.
type AssetOrder struct {
	By   string // SortUploaded (the default), SortCaptured or SortFilename
	Desc bool
}

// The orders of a list of assets. Photos without a capture time sort by
// their upload time among the others; file names sort by their bytes, as
// the same names do in any language.
const (
	SortUploaded = "uploaded"
	SortCaptured = "capturedAt"
	SortFilename = "filename"
)

// sortKeys are the SQL of each order's key, as the indexes of migration
// 0051 hold them.
var sortKeys = map[string]string{
	SortUploaded: "a.created_at",
	SortCaptured: "coalesce(a.captured_at, a.created_at)",
	SortFilename: `(a.filename COLLATE "C")`,
}

// name is what a cursor of the order carries: the upload order's is empty,
// as cursors of the list had before it had other orders.
func (o AssetOrder) name() string {
	n := o.By
	if n == "" {
		n = SortUploaded
	}
	if o.Desc {
		return n + ".desc"
	}
	if n == SortUploaded {
		return ""
	}
	return n
}

// Assets lists a project's assets in f's order, limit at a time. A cursor
// of another order is ErrBadCursor.
func (s *Store) Assets(ctx context.Context, project uuid.UUID, f AssetFilter, after *Cursor, limit int) (Page[Asset], error) {
	by := f.Order.By
	if by == "" {
		by = SortUploaded
	}
	key, ok := sortKeys[by]
	if !ok {
		return Page[Asset]{}, fmt.Errorf("store: no asset order %q", by)
	}
	op, dir := ">", "ASC"
	if f.Order.Desc {
		op, dir = "<", "DESC"
	}
	camera := containing(f.Camera)
	statuses := append([]string{}, f.Statuses...)
	args := []any{project, limit + 1, f.User, f.Picked, f.Rejected, f.RatingMin, camera, f.From, f.To, pq.Array(statuses),
		f.EyesClosed, f.FaceOutOfFocus, pq.Array(append([]string{}, f.ColorLabels...)), f.ClientFavorite}
	from := ""
	if after != nil {
		if after.Order != f.Order.name() {
			return Page[Asset]{}, ErrBadCursor
		}
		from = fmt.Sprintf(" AND (%s, a.id) %s ($15, $16)", key, op)
		if by == SortFilename {
			args = append(args, after.Key, after.ID)
		} else {
			args = append(args, after.Time, after.ID)
		}
	}
	var rows []Asset
	err := s.db.SelectContext(ctx, &rows, `SELECT `+assetColumns+` FROM assets a
		LEFT JOIN ratings r ON r.asset_id = a.id AND r.user_id = $3`+faceJoin+`a.id
		WHERE a.project_id = $1`+from+faceFilters("$11", "$12")+`
		  AND ($4::boolean IS NULL OR coalesce(r.picked, false) = $4)
		  AND ($5::boolean IS NULL OR coalesce(r.rejected, false) = $5)
		  AND ($6::int IS NULL OR r.rating >= $6)
		  AND (cardinality($13::text[]) = 0 OR coalesce(r.color_label, '`+NoColorLabel+`') = ANY($13))
		  AND ($7 = '' OR concat_ws(' ', a.camera_make, a.camera_model) ILIKE $7)
		  AND ($8::timestamptz IS NULL OR a.captured_at >= $8)
		  AND ($9::timestamptz IS NULL OR a.captured_at <= $9)
		  AND (cardinality($10::text[]) = 0 OR a.status = ANY($10))
		 `+clientFavoriteSQL("$14", "a.id", "$1")+`
		ORDER BY `+key+` `+dir+`, a.id `+dir+` LIMIT $2`, args...)
	if err != nil {
		return Page[Asset]{}, err
	}
	name := f.Order.name()
	return pageOf(rows, limit, func(a Asset) Cursor {
		switch by {
		case SortCaptured:
			t := a.CreatedAt
			if a.CapturedAt != nil {
				t = *a.CapturedAt
			}
			return Cursor{Time: t, ID: a.ID, Order: name}
		case SortFilename:
			return Cursor{ID: a.ID, Order: name, Key: a.Filename}
		}
		return Cursor{Time: a.CreatedAt, ID: a.ID, Order: name}
	}), nil
}

// LockPendingUpload locks an asset row for the end of an upload and reports
// whether it still takes bytes. The lock holds until the transaction of s
// ends, so call it inside WithTx.
func (s *Store) LockPendingUpload(ctx context.Context, id uuid.UUID) (bool, error) {
	var status string
	err := s.db.GetContext(ctx, &status, `SELECT status FROM assets WHERE id = $1 FOR UPDATE`, id)
	if err != nil {
		return false, notFound(err)
	}
	return status == AssetPendingUpload, nil
}

// RecordPendingUpload stores the size and SHA-256 the server computed for
// an upload if the asset still takes bytes, and reports whether it did. The
// row stays locked until the transaction of s ends, so the bytes can be put
// in place before a finalize sees the record: call it inside WithTx. An
// unknown asset is ErrNotFound.
func (s *Store) RecordPendingUpload(ctx context.Context, id uuid.UUID, sha string, size int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `
		UPDATE assets SET checksum_sha256 = $2, upload_size = $3, uploaded_at = now(), updated_at = now()
		WHERE id = $1 AND status = $4`, id, sha, size, AssetPendingUpload)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return n == 1, err
	}
	// Not recorded: tell an unknown asset from one that was finalized.
	_, err = s.LockPendingUpload(ctx, id)
	return false, err
}

// RecordUpload stores the size and SHA-256 the server computed for an upload.
func (s *Store) RecordUpload(ctx context.Context, id uuid.UUID, sha string, size int64) error {
	_, err := s.db.ExecContext(ctx, `
		UPDATE assets SET checksum_sha256 = $2, upload_size = $3, uploaded_at = now(), updated_at = now()
		WHERE id = $1`, id, sha, size)
	return err
}

// FailAsset marks an asset failed with a stable code and a reason.
func (s *Store) FailAsset(ctx context.Context, id uuid.UUID, code, message string) error {
	_, err := s.db.ExecContext(ctx, `
		UPDATE assets SET status = 'failed', error_code = $2, error_message = $3, updated_at = now()
		WHERE id = $1`, id, code, message)
	return err
}

// SaveCamera records the camera of an asset whose pixels could not be
// read, so a failed raw still says what wrote it.
func (s *Store) SaveCamera(ctx context.Context, id uuid.UUID, cameraMake, model, lens string) error {
	_, err := s.db.ExecContext(ctx, `
		UPDATE assets SET camera_make = nullif($2, ''), camera_model = nullif($3, ''), lens_model = nullif($4, ''),
			updated_at = now() WHERE id = $1`, id, cameraMake, model, lens)
	return err
}

// ExpiredUploads fails pending uploads whose URLs expired before cutoff and
// returns their blob keys, for the sweeper to delete partial files.
func (s *Store) ExpiredUploads(ctx context.Context, cutoff time.Time, limit int) ([]string, error) {
	var keys []string
	err := s.db.SelectContext(ctx, &keys, `
		UPDATE assets SET status = 'failed', error_code = 'upload_expired',
			error_message = 'The upload was not finalized before its URL expired.', updated_at = now()
		WHERE id IN (SELECT id FROM assets WHERE status = 'pending_upload' AND upload_expires_at < $1
		             ORDER BY upload_expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING blob_key`, cutoff, limit)
	return keys, err
}

// DeletedAsset is what DeleteAsset leaves for later: the blob keys to
// remove, and the asset's jobs that were waiting or running, whose tasks
// have nothing left to do.
type DeletedAsset struct {
	ProjectID uuid.UUID
	Keys      []string
	LiveJobs  []Job
}

// DeleteAsset removes owner's asset id at once, with its derived-file
// rows, ratings, cluster places and jobs; its bytes go later, by a task
// the caller records in the same transaction. Attestations stay, no
// longer naming the asset.
//
// late are the keys of files a task that read the asset before the delete
// may still write, until lateUntil. Those and the asset's own are recorded
// as discards due then, or when its upload URL expires if later, so the
// sweeper deletes whatever such a task or URL puts back after the delete
// task has run. No live row can name them: keys are the asset's own.
func (s *Store) DeleteAsset(ctx context.Context, owner, id uuid.UUID, late []string, lateUntil time.Time) (*DeletedAsset, error) {
	out := &DeletedAsset{}
	until := lateUntil
	// The chain's flush holds an asset's queue rows while its insert
	// waits for the asset, which the cascade below holds while it waits
	// for those rows: Postgres ends one of the two, and the delete runs
	// again rather than fail the request.
	err := s.retryDeadlocks(ctx, func(tx *Store) error {
		*out, lateUntil = DeletedAsset{}, until
		var a struct {
			ProjectID  uuid.UUID  `db:"project_id"`
			BlobKey    string     `db:"blob_key"`
			URLExpires *time.Time `db:"upload_expires_at"`
		}
		err := tx.db.GetContext(ctx, &a, `SELECT a.project_id, a.blob_key, a.upload_expires_at FROM assets a
			JOIN projects p ON p.id = a.project_id WHERE a.id = $1 AND p.owner_user_id = $2 FOR UPDATE OF a`, id, owner)
		if err != nil {
			return notFound(err)
		}
		out.ProjectID = a.ProjectID
		// Its watermarked gallery previews go with it. Its gallery places
		// are deleted here, not by the cascade, so a render recording its
		// preview meanwhile is waited for and its key read, or finds the
		// place gone: read before, that key would be no discard any more.
		if err := tx.db.SelectContext(ctx, &out.Keys, `
			WITH places AS (DELETE FROM gallery_assets WHERE asset_id = $1 RETURNING watermark_key)
			SELECT blob_key FROM asset_files WHERE asset_id = $1 AND blob_key <> $2
			UNION SELECT watermark_key FROM places WHERE watermark_key IS NOT NULL
			UNION SELECT unnest($3::text[])
			ORDER BY 1`, id, a.BlobKey, pq.Array(late)); err != nil {
			return err
		}
		if err := tx.db.SelectContext(ctx, &out.LiveJobs, `SELECT `+jobColumns+` FROM jobs j
			WHERE j.asset_id = $1 AND j.status IN ('queued', 'running')`, id); err != nil {
			return err
		}
		if _, err := tx.db.ExecContext(ctx, `DELETE FROM assets WHERE id = $1`, id); err != nil {
			return err
		}
		out.Keys = append([]string{a.BlobKey}, out.Keys...)
		if a.URLExpires != nil && a.URLExpires.After(lateUntil) {
			lateUntil = *a.URLExpires
		}
		return tx.DiscardAfter(ctx, out.Keys, lateUntil)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
