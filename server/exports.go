package server

// Exports, as built here and in the worker:
//
//   - Status is queued, running, done, failed or canceled, and expired once
//     the sweeper has deleted a finished export's file. The file is kept
//     exportTTL (7 days) from when it was built; expiresAt says when.
//   - settings in the answer are the effective ones: the preset's defaults
//     with the request's overrides applied.
//   - Photos render from their originals (previews are lossy and no larger
//     than the web preset); contact sheets use the preview when there is one.
//     Photos still processing are included unless includeNotReady is false;
//     failed and duplicate photos are always left out. Everything left out
//     is listed in skipped with a reason code.
//   - A download URL lives 15 minutes, never past the export's expiry.

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/blob"
	"lightbox/ptr"
	"lightbox/render"
	"lightbox/store"
)

// exportTTL is how long an export's file is kept once built; the sweeper
// deletes it afterwards.
const exportTTL = 7 * 24 * time.Hour

const maxExportAssets = 10_000

type exportJSON struct {
	ID        string          `json:"id"`
	ProjectID string          `json:"projectId"`
	BatchID   *uuid.UUID      `json:"batchId"`
	JobID     *uuid.UUID      `json:"jobId"`
	Preset    string          `json:"preset"`
	Settings  json.RawMessage `json:"settings"`
	Status    store.JobStatus `json:"status"`
	Progress  float64         `json:"progress"`
	Skipped   json.RawMessage `json:"skipped"`
	Error     *errorJSON      `json:"error"`
	ByteSize  *int64          `json:"byteSize"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
	StartedAt *time.Time      `json:"startedAt"`
	ExpiresAt *time.Time      `json:"expiresAt"`
}

func toExportJSON(e *store.Export) exportJSON {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	out := exportJSON{
		ID: e.ID.String(), ProjectID: e.ProjectID.String(), BatchID: e.BatchID, JobID: e.JobID, Preset: e.Preset,
		Settings: e.Settings, Status: e.Status, Progress: math.Round(e.Progress*1000) / 1000, Skipped: e.Skipped,
		ByteSize: e.ByteSize, CreatedAt: e.CreatedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC(),
		StartedAt: utc(e.StartedAt), ExpiresAt: utc(e.ExpiresAt),
	}
	if e.ErrorCode != nil {
		out.Error = &errorJSON{Code: *e.ErrorCode, Message: ptr.Value(e.ErrorMessage)}
	}
	return out
}

// createExport records an export and the job that builds it, then
// enqueues the job on the critical queue, ahead of the ingest pipeline.
func (s *Server) createExport(c *gin.Context) {
	ctx := c.Request.Context()
	p, err := s.ownProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	if p.Status == "deleted" {
		fail(c, apiError(http.StatusConflict, "project_not_active", "The project is deleted; it cannot be exported."))
		return
	}
	var in struct {
		Preset   string          `json:"preset"`
		AssetIDs []string        `json:"assetIds"`
		Settings json.RawMessage `json:"settings"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	pr, ok := render.Lookup(in.Preset)
	if !ok {
		errs.Add("preset", "must be "+render.PresetNames())
	}
	settings, problems := pr.ParseSettings(in.Settings)
	for field, problem := range problems {
		errs.Add(field, problem)
	}
	ids := parseAssetIDs(errs, in.AssetIDs, maxExportAssets)
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	if err := s.checkProjectAssets(ctx, p.ID, ids); err != nil {
		fail(c, err)
		return
	}

	raw, _ := json.Marshal(settings)
	e := &store.Export{ID: uuid.New(), ProjectID: p.ID, UserID: principal(c).ID, Preset: pr.Name, Settings: raw, TTL: exportTTL}
	e.AssetIDs = ids
	if err := s.app.Export(ctx, e); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, toExportJSON(e))
}

// checkProjectAssets answers validation_failed naming those of ids that
// are not assets of project.
func (s *Server) checkProjectAssets(ctx context.Context, project uuid.UUID, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	foreign, err := s.store.ForeignAssets(ctx, project, ids)
	if err != nil {
		return err
	}
	if len(foreign) > 0 {
		return apiError(http.StatusBadRequest, "validation_failed", "%d of the assets are not in this project.", len(foreign)).
			with("fields", map[string]string{"assetIds": "must name assets of this project"}).with("assetIds", foreign)
	}
	return nil
}

// ownExport loads the caller's export named by the path; another user's
// export does not exist for this caller.
func (s *Server) ownExport(c *gin.Context) (*store.Export, error) { return owned(c, s.store.Export) }

func (s *Server) getExport(c *gin.Context) {
	e, err := s.ownExport(c)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toExportJSON(e))
}

// exportDownload hands out a signed URL of the finished archive, served by
// the /blobs route. The URL lives downloadTTL, never past the export.
func (s *Server) exportDownload(c *gin.Context) {
	e, err := s.ownExport(c)
	if err != nil {
		fail(c, err)
		return
	}
	now := time.Now()
	expired := e.Status == store.ExportExpired || (e.Status == store.JobDone && e.ExpiresAt != nil && !now.Before(*e.ExpiresAt))
	switch {
	case expired:
		fail(c, apiError(http.StatusGone, "export_expired", "The export's file was deleted when it expired; export again."))
		return
	case e.Status != store.JobDone || e.BlobKey == nil:
		fail(c, apiError(http.StatusConflict, "export_not_ready", "The export is %s; its file can be downloaded once it is done.", e.Status).
			with("status", e.Status))
		return
	}
	expires := now.Add(downloadTTL).UTC().Truncate(time.Second)
	if e.ExpiresAt != nil && e.ExpiresAt.Before(expires) {
		expires = e.ExpiresAt.UTC().Truncate(time.Second)
	}
	u, err := s.signer.SignGet(c.Request.Context(), blob.Grant{Key: *e.BlobKey, Expires: expires, ContentType: render.ArchiveType(e.Preset)})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"url": u.URL, "expiresAt": u.Expires, "byteSize": e.ByteSize})
}

// cancelExport stops an export: a queued one's task is deleted from the
// queue, a running one's handler sees its context end and discards the
// partial file. The job and its batch are canceled with it.
func (s *Server) cancelExport(c *gin.Context) {
	ctx := c.Request.Context()
	e, err := s.ownExport(c)
	if err != nil {
		fail(c, err)
		return
	}
	e, canceled, err := s.app.CancelExport(ctx, logger(c), e)
	if err != nil {
		fail(c, err)
		return
	}
	if !canceled && e.Status != store.JobCanceled {
		fail(c, apiError(http.StatusConflict, "export_finished", "The export is %s; only a queued or running export can be canceled.", e.Status).
			with("status", e.Status))
		return
	}
	c.JSON(http.StatusOK, toExportJSON(e))
}
