package store

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// FaceScan is one look for faces in an asset's preview, and its summary.
type FaceScan struct {
	AssetID      uuid.UUID `db:"asset_id"`
	ProjectID    uuid.UUID `db:"project_id"`
	Model        string    `db:"model"`
	Width        int       `db:"width_px"`
	Height       int       `db:"height_px"`
	FaceCount    int       `db:"face_count"`
	EyesClosed   int       `db:"eyes_closed"`
	OutOfFocus   int       `db:"out_of_focus"`
	MinSharpness *float64  `db:"min_sharpness"`
	// FacesClipped is the middle face's Face.Clipped (the median of the
	// faces'); nil without faces, or for a scan from before it was read.
	FacesClipped *float64  `db:"faces_clipped"`
	ScannedAt    time.Time `db:"scanned_at"`
}

// Face is one face of a scan. The mesh's measures are nil when the
// provider gave none.
type Face struct {
	N          int             `db:"n"`
	X          float64         `db:"box_x"`
	Y          float64         `db:"box_y"`
	W          float64         `db:"box_w"`
	H          float64         `db:"box_h"`
	Score      float64         `db:"score"`
	EyeLeft    *float64        `db:"eye_left"`
	EyeRight   *float64        `db:"eye_right"`
	Yaw        *float64        `db:"yaw"`
	Pitch      *float64        `db:"pitch"`
	Roll       *float64        `db:"roll"`
	Landmarks  json.RawMessage `db:"landmarks"`
	Sharpness  float64         `db:"sharpness"`
	EyesClosed bool            `db:"eyes_closed"`
	OutOfFocus bool            `db:"out_of_focus"`
	// Clipped is the share of the face's pixels with a channel clipped
	// (faces.Clipped); nil for a face from before it was read.
	Clipped *float64 `db:"clipped"`
}

// SaveFaces replaces the faces of scan's asset with faces, numbered in
// their order, and the scan's summary with theirs, when the asset's
// project still detects faces, and returns the scan with its summary; nil
// when the project no longer detects faces. The project's
// row is held while they are written, so a project that switches faces
// off meanwhile deletes them after, never before. A missing asset is
// ErrNotFound.
func (s *Store) SaveFaces(ctx context.Context, scan FaceScan, faces []Face) (*FaceScan, error) {
	var saved *FaceScan
	err := s.WithTx(ctx, func(tx *Store) error {
		var on bool
		err := tx.db.GetContext(ctx, &on, `SELECT p.detect_faces FROM assets a JOIN projects p ON p.id = a.project_id
			WHERE a.id = $1 FOR SHARE OF p`, scan.AssetID)
		if err != nil || !on {
			return notFound(err)
		}
		scan.FaceCount, scan.EyesClosed, scan.OutOfFocus, scan.MinSharpness = len(faces), 0, 0, nil
		scan.FacesClipped = middleClipped(faces)
		for _, f := range faces {
			if f.EyesClosed {
				scan.EyesClosed++
			}
			if f.OutOfFocus {
				scan.OutOfFocus++
			}
			if scan.MinSharpness == nil || f.Sharpness < *scan.MinSharpness {
				sharp := f.Sharpness
				scan.MinSharpness = &sharp
			}
		}
		if _, err := tx.db.ExecContext(ctx, `
			INSERT INTO face_scans (asset_id, project_id, model, width_px, height_px, face_count, eyes_closed, out_of_focus,
				min_sharpness, faces_clipped)
			SELECT $1, project_id, $2, $3, $4, $5, $6, $7, $8, $9 FROM assets WHERE id = $1
			ON CONFLICT (asset_id) DO UPDATE SET model = EXCLUDED.model, width_px = EXCLUDED.width_px,
				height_px = EXCLUDED.height_px, face_count = EXCLUDED.face_count, eyes_closed = EXCLUDED.eyes_closed,
				out_of_focus = EXCLUDED.out_of_focus, min_sharpness = EXCLUDED.min_sharpness,
				faces_clipped = EXCLUDED.faces_clipped, scanned_at = now()`,
			scan.AssetID, scan.Model, scan.Width, scan.Height, scan.FaceCount, scan.EyesClosed, scan.OutOfFocus,
			scan.MinSharpness, scan.FacesClipped); err != nil {
			return err
		}
		if _, err := tx.db.ExecContext(ctx, `DELETE FROM faces WHERE asset_id = $1`, scan.AssetID); err != nil {
			return err
		}
		for i, f := range faces {
			landmarks := f.Landmarks
			if len(landmarks) == 0 {
				landmarks = nil
			}
			if _, err := tx.db.ExecContext(ctx, `
				INSERT INTO faces (asset_id, n, box_x, box_y, box_w, box_h, score, eye_left, eye_right, yaw, pitch, roll,
					landmarks, sharpness, eyes_closed, out_of_focus, clipped)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
				scan.AssetID, i, f.X, f.Y, f.W, f.H, f.Score, f.EyeLeft, f.EyeRight, f.Yaw, f.Pitch, f.Roll,
				landmarks, f.Sharpness, f.EyesClosed, f.OutOfFocus, f.Clipped); err != nil {
				return err
			}
		}
		saved = &scan
		return nil
	})
	return saved, err
}

// middleClipped is the median of faces' clipped shares (the lower middle
// of an even count), read over the faces that have one; nil when none
// has.
func middleClipped(faces []Face) *float64 {
	var shares []float64
	for _, f := range faces {
		if f.Clipped != nil {
			shares = append(shares, *f.Clipped)
		}
	}
	if len(shares) == 0 {
		return nil
	}
	slices.Sort(shares)
	m := shares[(len(shares)-1)/2]
	return &m
}

// Faces returns an asset's scan and its faces, or a nil scan when its
// faces were not looked for.
func (s *Store) Faces(ctx context.Context, asset uuid.UUID) (*FaceScan, []Face, error) {
	scan := &FaceScan{}
	err := s.db.GetContext(ctx, scan, `SELECT asset_id, project_id, model, width_px, height_px, face_count, eyes_closed,
		out_of_focus, min_sharpness, faces_clipped, scanned_at FROM face_scans WHERE asset_id = $1`, asset)
	if err = notFound(err); err == ErrNotFound {
		return nil, []Face{}, nil
	} else if err != nil {
		return nil, nil, err
	}
	faces := []Face{}
	err = s.db.SelectContext(ctx, &faces, `SELECT n, box_x, box_y, box_w, box_h, score, eye_left, eye_right, yaw, pitch,
		roll, coalesce(landmarks, 'null') AS landmarks, sharpness, eyes_closed, out_of_focus, clipped FROM faces
		WHERE asset_id = $1 ORDER BY n`, asset)
	return scan, faces, err
}

// FaceScans returns the scans of those of ids that have one, by asset.
func (s *Store) FaceScans(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]FaceScan, error) {
	var rows []FaceScan
	err := s.db.SelectContext(ctx, &rows, `SELECT asset_id, project_id, model, width_px, height_px, face_count, eyes_closed,
		out_of_focus, min_sharpness, faces_clipped, scanned_at FROM face_scans WHERE asset_id = ANY($1)`, pq.Array(ids))
	out := make(map[uuid.UUID]FaceScan, len(rows))
	for _, r := range rows {
		out[r.AssetID] = r
	}
	return out, err
}

// DetectsFaces reports whether project has faces switched on.
func (s *Store) DetectsFaces(ctx context.Context, project uuid.UUID) (bool, error) {
	var on bool
	err := s.db.GetContext(ctx, &on, `SELECT detect_faces FROM projects WHERE id = $1`, project)
	return on, notFound(err)
}

// LockDetectsFaces is DetectsFaces holding the project's row until tx
// ends, so that two changes of faces do not both see it off.
func (s *Store) LockDetectsFaces(ctx context.Context, project uuid.UUID) (bool, error) {
	var on bool
	err := s.db.GetContext(ctx, &on, `SELECT detect_faces FROM projects WHERE id = $1 FOR NO KEY UPDATE`, project)
	return on, notFound(err)
}

// Unscanned returns up to limit of project's processed photos (cull-ready
// or further) whose faces were not looked for, after the id after in id
// order; none when the project does not detect faces. Called in a
// transaction, it holds the project's row until the transaction ends: a
// scan being saved holds it too, so no scan is saved between this read
// and the end of the jobs the caller records, and a photo is never found
// unscanned while its scan is being saved.
func (s *Store) Unscanned(ctx context.Context, project, after uuid.UUID, limit int) ([]uuid.UUID, error) {
	on, err := s.LockDetectsFaces(ctx, project)
	if err != nil || !on {
		return nil, err
	}
	var ids []uuid.UUID
	err = s.db.SelectContext(ctx, &ids, `SELECT a.id FROM assets a
		WHERE a.project_id = $1 AND a.status IN ('cull', 'search', 'ai') AND a.id > $2
		  AND NOT EXISTS (SELECT 1 FROM face_scans fs WHERE fs.asset_id = a.id)
		ORDER BY a.id LIMIT $3`, project, after, limit)
	return ids, err
}

// deleteFaces deletes every face of project, with their scans.
func (s *Store) deleteFaces(ctx context.Context, project uuid.UUID) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM face_scans WHERE project_id = $1`, project)
	return err
}

// faceFilters are the eyesClosed and faceOutOfFocus filters of a list or a
// search, on the scan fs joined by faceJoin, with their arguments'
// placeholders. A photo whose faces were not looked for has none closed
// and none soft.
func faceFilters(eyes, soft string) string {
	return `
		AND (` + eyes + `::boolean IS NULL OR coalesce(fs.eyes_closed > 0, false) = ` + eyes + `)
		AND (` + soft + `::boolean IS NULL OR coalesce(fs.out_of_focus > 0, false) = ` + soft + `)`
}

// faceJoin joins an asset's scan as fs; the asset's id follows.
const faceJoin = ` LEFT JOIN face_scans fs ON fs.asset_id = `
