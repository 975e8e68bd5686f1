package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// ExportExpired is the state of a finished export whose file was deleted
// after its expiry; the other states are the job states.
const ExportExpired JobStatus = "expired"

// ErrStaleRun is the answer to a write of an export's run that no longer
// holds the export: a later run took it over (the first was handed back
// at a stop, or lost its lease), or it ended otherwise than by a cancel.
// The write changed nothing; the run should stop without a trace.
var ErrStaleRun = errors.New("store: a later run of the export took it over")

// Export is an archive a user asked for and how far its build has come.
type Export struct {
	ID           uuid.UUID       `db:"id"`
	ProjectID    uuid.UUID       `db:"project_id"`
	UserID       uuid.UUID       `db:"user_id"`
	BatchID      *uuid.UUID      `db:"batch_id"`
	JobID        *uuid.UUID      `db:"job_id"`
	Preset       string          `db:"preset"`
	Settings     json.RawMessage `db:"settings"`
	AssetIDs     UUIDs           `db:"asset_ids"` // nil: every finalized asset of the project
	Status       JobStatus       `db:"status"`
	Progress     float64         `db:"progress"`
	BlobKey      *string         `db:"blob_key"`
	ByteSize     *int64          `db:"byte_size"`
	Skipped      json.RawMessage `db:"skipped"`
	ErrorCode    *string         `db:"error_code"`
	ErrorMessage *string         `db:"error_message"`
	CreatedAt    time.Time       `db:"created_at"`
	UpdatedAt    time.Time       `db:"updated_at"`
	StartedAt    *time.Time      `db:"started_at"`
	ExpiresAt    *time.Time      `db:"expires_at"`
	// TTL, when above 0, sets ExpiresAt at the insert, from the database's
	// own clock, so the export is kept TTL after its created_at (to the
	// second) however long the request took to reach the insert.
	TTL      time.Duration `db:"-"`
	RunToken *uuid.UUID    `db:"run_token"` // the latest run's, set by StartExport
	// Plan is the assets the export covers, in the archive's order, fixed
	// by its first run (SetExportPlan); ItemsDone of them are handled and
	// Pages contact sheet pages drawn (ExportStep).
	Plan      UUIDs `db:"plan"`
	ItemsDone int   `db:"items_done"`
	Pages     int   `db:"pages"`
}

// ExportSkip is an asset an export left out, and why.
type ExportSkip struct {
	AssetID  uuid.UUID `json:"assetId"`
	Filename string    `json:"filename"`
	Reason   string    `json:"reason"` // a stable code
	Message  string    `json:"message"`
}

const exportColumns = `e.id, e.project_id, e.user_id, e.batch_id, e.job_id, e.preset, e.settings, e.asset_ids, e.status,
	e.progress, e.blob_key, e.byte_size, e.skipped, e.error_code, e.error_message, e.created_at, e.updated_at,
	e.started_at, e.expires_at, e.run_token, e.plan, e.items_done, e.pages`

// exportRead selects exports as users see them. A cancel is recorded on
// the export's job first (a batch cancel reaches only the job), so an
// unfinished export whose job was canceled reads as canceled.
var exportRead = `SELECT ` + strings.Replace(exportColumns, "e.status,",
	`CASE WHEN e.status IN ('queued', 'running', 'failed') AND j.status = 'canceled' THEN 'canceled' ELSE e.status END AS status,`, 1) +
	` FROM exports e LEFT JOIN jobs j ON j.id = e.job_id`

// CreateExport records e, whose batch and job the caller has recorded
// in the same transaction (jobs.Insert), and fills in its timestamps.
func (s *Store) CreateExport(ctx context.Context, e *Export) error {
	var ids any
	if e.AssetIDs != nil {
		ids = e.AssetIDs
	}
	return s.db.GetContext(ctx, e, `
		INSERT INTO exports AS e (id, project_id, user_id, batch_id, job_id, preset, settings, asset_ids, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8::uuid[],
			CASE WHEN $10::float8 > 0 THEN date_trunc('second', now() + make_interval(secs => $10::float8)) ELSE $9::timestamptz END)
		RETURNING `+exportColumns,
		e.ID, e.ProjectID, e.UserID, e.BatchID, e.JobID, e.Preset, string(e.Settings), ids, e.ExpiresAt, e.TTL.Seconds())
}

// Export returns owner's export id.
func (s *Store) Export(ctx context.Context, owner, id uuid.UUID) (*Export, error) {
	e := &Export{}
	err := s.db.GetContext(ctx, e, exportRead+` JOIN projects p ON p.id = e.project_id
		WHERE e.id = $1 AND p.owner_user_id = $2`, id, owner)
	return e, notFound(err)
}

// ExportByID returns an export whatever its owner; for the worker.
func (s *Store) ExportByID(ctx context.Context, id uuid.UUID) (*Export, error) {
	e := &Export{}
	err := s.db.GetContext(ctx, e, exportRead+` WHERE e.id = $1`, id)
	return e, notFound(err)
}

// ForeignAssets returns those of ids that are not assets of project, in
// the order given.
func (s *Store) ForeignAssets(ctx context.Context, project uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error) {
	var out []uuid.UUID
	err := s.db.SelectContext(ctx, &out, `
		SELECT u.id FROM unnest($2::uuid[]) WITH ORDINALITY AS u(id, n)
		WHERE NOT EXISTS (SELECT 1 FROM assets a WHERE a.id = u.id AND a.project_id = $1)
		ORDER BY u.n`, project, pq.Array(ids))
	return out, err
}

// StartExport moves an export to running for a new run, under a new
// e.RunToken that the run's later writes name. An export already running
// is taken over: its earlier run yielded, or was handed back and must not
// write again. A run goes on from the steps earlier runs recorded; one
// started again after the export failed starts afresh. started is false
// when the export is done, canceled or expired: there is nothing to build.
func (s *Store) StartExport(ctx context.Context, id uuid.UUID) (e *Export, started bool, err error) {
	return s.moveExport(ctx, id, `
		UPDATE exports e SET status = 'running', error_code = NULL, error_message = NULL,
			progress = CASE WHEN status = 'failed' THEN 0 ELSE progress END,
			skipped = CASE WHEN status = 'failed' THEN '[]' ELSE skipped END,
			plan = CASE WHEN status = 'failed' THEN NULL ELSE plan END,
			items_done = CASE WHEN status = 'failed' THEN 0 ELSE items_done END,
			pages = CASE WHEN status = 'failed' THEN 0 ELSE pages END,
			run_token = $2, started_at = coalesce(started_at, now()), updated_at = now()
		WHERE id = $1 AND status IN ('queued', 'running', 'failed')
		RETURNING `+exportColumns, uuid.New())
}

// SetExportPlan fixes the assets run's export covers, once: a plan set
// by an earlier run stays. It returns the plan in force.
func (s *Store) SetExportPlan(ctx context.Context, id, run uuid.UUID, plan []uuid.UUID) ([]uuid.UUID, error) {
	var out UUIDs
	err := s.db.GetContext(ctx, &out, `
		UPDATE exports SET plan = coalesce(plan, $3::uuid[]), updated_at = now()
		WHERE id = $1 AND status = 'running' AND run_token = $2
		RETURNING plan`, id, run, pq.Array(plan))
	if errors.Is(notFound(err), ErrNotFound) {
		return nil, s.lostRun(ctx, id, run)
	}
	return out, err
}

// moveExport runs an update of export id that returns it when it applies,
// and otherwise returns the export as it stands, with moved false.
func (s *Store) moveExport(ctx context.Context, id uuid.UUID, update string, args ...any) (e *Export, moved bool, err error) {
	e = &Export{}
	err = s.db.GetContext(ctx, e, update, append([]any{id}, args...)...)
	if err == nil {
		return e, true, nil
	}
	if err = notFound(err); !errors.Is(err, ErrNotFound) {
		return nil, false, err
	}
	e, err = s.ExportByID(ctx, id)
	return e, false, err
}

// ExportStep is what a run of an export has done so far: the plan's
// items handled (rendered, or skipped and listed in Skipped), the contact
// sheet pages drawn, and the progress from 0 to 1.
type ExportStep struct {
	ItemsDone, Pages int
	Skipped          []ExportSkip
	Progress         float64
}

// ExportProgress records a step of run of an export, on the export and
// its job's progress. running is false once the export or its job was
// canceled (or the export deleted); the export is then marked canceled
// too. ErrStaleRun means a later run holds the export.
func (s *Store) ExportProgress(ctx context.Context, id, run uuid.UUID, step ExportStep) (running bool, err error) {
	err = s.WithTx(ctx, func(tx *Store) error {
		var status JobStatus
		err := tx.db.GetContext(ctx, &status, `
			UPDATE exports e SET progress = $2, items_done = $4, pages = $5, skipped = $6, updated_at = now(),
				status = CASE WHEN j.status = 'canceled' THEN 'canceled' ELSE e.status END
			FROM jobs j WHERE e.id = $1 AND j.id = e.job_id AND e.status = 'running' AND e.run_token = $3
			RETURNING e.status`, id, step.Progress, run, step.ItemsDone, step.Pages, skipsJSON(step.Skipped))
		if errors.Is(notFound(err), ErrNotFound) {
			return tx.lostRun(ctx, id, run)
		}
		if err != nil || status != JobRunning {
			return notFound(err)
		}
		running = true
		_, err = tx.db.ExecContext(ctx, `UPDATE jobs j SET progress = $2, updated_at = now()
			FROM exports e WHERE e.id = $1 AND j.id = e.job_id AND j.status = 'running'`, id, step.Progress)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return running, err
}

// FinishExport records run's built export: its file, what it left out,
// and its expiry, counted from now with the time to live it was created
// with. The run discarded key before writing it (see DiscardAfter); the
// discard goes in the same transaction, so the file is the export's from
// then on. ErrNotFound means the export or its job was canceled meanwhile
// (or the export deleted), ErrStaleRun that a later run holds the export,
// ErrDiscardDue that the run took so long that the sweeper may be deleting
// its file. On an error the discard stays.
func (s *Store) FinishExport(ctx context.Context, id, run uuid.UUID, key string, size int64, skipped []ExportSkip) (*Export, error) {
	e := &Export{}
	err := s.WithTx(ctx, func(tx *Store) error {
		err := tx.db.GetContext(ctx, e, `
			UPDATE exports e SET status = 'done', progress = 1, blob_key = $2, byte_size = $3, skipped = $4,
				expires_at = now() + coalesce(expires_at - created_at, interval '7 days'), updated_at = now()
			WHERE id = $1 AND status = 'running' AND run_token = $5
			  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = e.job_id AND j.status = 'canceled')
			RETURNING `+exportColumns, id, key, size, skipsJSON(skipped), run)
		if errors.Is(notFound(err), ErrNotFound) {
			return tx.lostRun(ctx, id, run)
		}
		if err != nil {
			return err
		}
		return tx.claimDiscard(ctx, key)
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// FailExport records run's attempt that failed: status is 'queued' when
// the task will run again, 'failed' when it will not, and 'canceled'
// whatever it was asked when the job was canceled meanwhile. Errors are
// FinishExport's.
func (s *Store) FailExport(ctx context.Context, id, run uuid.UUID, status JobStatus, code, message string, skipped []ExportSkip) (*Export, error) {
	e := &Export{}
	err := s.db.GetContext(ctx, e, `
		UPDATE exports e SET status = CASE WHEN j.status = 'canceled' THEN 'canceled' ELSE $2 END,
			error_code = $3, error_message = $4, skipped = $5, updated_at = now()
		FROM jobs j WHERE e.id = $1 AND j.id = e.job_id AND e.status = 'running' AND e.run_token = $6
		RETURNING `+exportColumns, id, status, code, message, skipsJSON(skipped), run)
	if errors.Is(notFound(err), ErrNotFound) {
		return nil, s.lostRun(ctx, id, run)
	}
	return e, err
}

// lostRun says why a write of run found export id not running under it:
// ErrNotFound when run still holds it but it or its job was canceled, or
// it was deleted; else ErrStaleRun. A superseded run is stale even when
// the export was canceled since: the run that took it over handles that.
func (s *Store) lostRun(ctx context.Context, id, run uuid.UUID) error {
	e, err := s.ExportByID(ctx, id)
	switch {
	case err != nil:
		return err
	case e.RunToken != nil && *e.RunToken == run && e.Status == JobCanceled:
		return ErrNotFound
	}
	return ErrStaleRun
}

func skipsJSON(skipped []ExportSkip) string {
	if skipped == nil {
		skipped = []ExportSkip{}
	}
	b, _ := json.Marshal(skipped)
	return string(b)
}

// CancelExport marks a queued or running export canceled. canceled is
// false when it had already ended; e is the export as it now stands.
func (s *Store) CancelExport(ctx context.Context, id uuid.UUID) (e *Export, canceled bool, err error) {
	return s.moveExport(ctx, id, `UPDATE exports e SET status = 'canceled', updated_at = now()
		WHERE id = $1 AND status IN ('queued', 'running')
		RETURNING `+exportColumns)
}

// ExpiredExports lists finished exports whose expiry passed before now.
func (s *Store) ExpiredExports(ctx context.Context, now time.Time, limit int) ([]Export, error) {
	var out []Export
	err := s.db.SelectContext(ctx, &out, exportRead+`
		WHERE e.status = 'done' AND e.expires_at < $1 ORDER BY e.expires_at LIMIT $2`, now, limit)
	return out, err
}

// ExpireExport records that a finished export's file was deleted, and
// returns the export, expired true when this call expired it.
func (s *Store) ExpireExport(ctx context.Context, id uuid.UUID) (e *Export, expired bool, err error) {
	return s.moveExport(ctx, id, `UPDATE exports e SET status = 'expired', blob_key = NULL, updated_at = now()
		WHERE id = $1 AND status = 'done' RETURNING `+exportColumns)
}

// ExportItem is an asset an export considers, with what it needs to be
// exported or skipped.
type ExportItem struct {
	AssetID        uuid.UUID  `db:"id"`
	Filename       string     `db:"filename"`
	ContentType    string     `db:"content_type"`
	Status         string     `db:"status"`
	BlobKey        string     `db:"blob_key"`
	ChecksumSHA256 *string    `db:"checksum_sha256"`
	DuplicateOf    *uuid.UUID `db:"duplicate_of"`
	ErrorMessage   *string    `db:"error_message"`
	CapturedAt     *time.Time `db:"captured_at"`
	CapturedOffset *string    `db:"captured_offset"`
	PreviewKey     *string    `db:"preview_key"` // nil until ingest made the preview
	// EditParams are the asset's newest edit version's, nil without one;
	// EditPreviewKey its render's preview, once made.
	EditParams     []byte  `db:"edit_params"`
	WidthPx        *int    `db:"width_px"` // as shown, once ingest measured it
	HeightPx       *int    `db:"height_px"`
	EditPreviewKey *string `db:"edit_preview_key"`
	// What the export's owner decided, and the photo's captions: what an
	// export with XMP writes for an editor.
	Keywords   Strings         `db:"keywords"`
	IPTC       json.RawMessage `db:"iptc"`
	Rating     *int            `db:"rating"`
	Picked     bool            `db:"picked"`
	Rejected   bool            `db:"rejected"`
	ColorLabel *string         `db:"color_label"`
	// SidecarKey is the XMP sidecar uploaded with the photo, if any: an
	// export merges into it.
	SidecarKey *string `db:"sidecar_key"`
}

// ExportPlan lists the assets e covers, in the archive's order: the ones
// it names, in the order named, or every finalized asset of its project
// in capture order. pairs ("both" or "", "raw", "jpeg") says which halves
// of RAW+JPEG pairs go in: one named brings its other half with it, right
// after it, unless pairs leaves that half out.
func (s *Store) ExportPlan(ctx context.Context, e *Export, pairs string) ([]uuid.UUID, error) {
	var rows []struct {
		ID   uuid.UUID  `db:"id"`
		Pair *uuid.UUID `db:"pair_asset_id"`
		Raw  bool       `db:"raw"`
	}
	var err error
	if e.AssetIDs != nil {
		err = s.db.SelectContext(ctx, &rows, `
			SELECT u.id, a.pair_asset_id, coalesce(a.content_type = ANY($3), false) AS raw
			FROM unnest($2::uuid[]) WITH ORDINALITY AS u(id, n) LEFT JOIN assets a ON a.id = u.id AND a.project_id = $1
			ORDER BY u.n`, e.ProjectID, e.AssetIDs, rawTypes)
	} else {
		err = s.db.SelectContext(ctx, &rows, `
			SELECT id, pair_asset_id, content_type = ANY($2) AS raw FROM assets WHERE project_id = $1 AND status <> 'pending_upload'
			ORDER BY captured_at NULLS LAST, created_at, id`, e.ProjectID, rawTypes)
	}
	if err != nil {
		return nil, err
	}
	out := make([]uuid.UUID, 0, len(rows))
	seen := make(map[uuid.UUID]bool, len(rows))
	add := func(id uuid.UUID, isRaw, paired bool) {
		if seen[id] || paired && (pairs == "raw" && !isRaw || pairs == "jpeg" && isRaw) {
			return
		}
		seen[id] = true
		out = append(out, id)
	}
	for _, r := range rows {
		add(r.ID, r.Raw, r.Pair != nil)
		if r.Pair != nil {
			// The other half is the opposite kind: a pair is a raw and a JPEG.
			add(*r.Pair, !r.Raw, true)
		}
	}
	return out, nil
}

// ExportItems returns the assets of e's project among ids, in the order
// of ids, with the decisions of e's owner; an asset deleted since is
// missing.
func (s *Store) ExportItems(ctx context.Context, e *Export, ids []uuid.UUID) ([]ExportItem, error) {
	var out []ExportItem
	err := s.db.SelectContext(ctx, &out, `
		SELECT a.id, a.filename, a.content_type, a.status, a.blob_key, a.checksum_sha256, a.duplicate_of,
		       a.error_message, a.captured_at, a.captured_offset, f.blob_key AS preview_key,
		       v.params AS edit_params, ef.blob_key AS edit_preview_key, a.width_px, a.height_px,
		       a.keywords, a.iptc, r.rating, COALESCE(r.picked, false) AS picked,
		       COALESCE(r.rejected, false) AS rejected, r.color_label, sf.blob_key AS sidecar_key
		FROM unnest($2::uuid[]) WITH ORDINALITY AS u(id, n)
		JOIN assets a ON a.id = u.id AND a.project_id = $1
		LEFT JOIN asset_files f ON f.asset_id = a.id AND f.kind = 'preview'
		LEFT JOIN asset_files ef ON ef.asset_id = a.id AND ef.kind = 'edit_preview'
		LEFT JOIN ratings r ON r.asset_id = a.id AND r.user_id = $3
		LEFT JOIN asset_files sf ON sf.asset_id = a.id AND sf.kind = 'xmp_sidecar'
		LEFT JOIN LATERAL (SELECT params FROM edit_versions v WHERE v.asset_id = a.id
			ORDER BY v.created_at DESC, v.id DESC LIMIT 1) v ON true
		ORDER BY u.n`, e.ProjectID, pq.Array(ids), e.UserID)
	return out, err
}
