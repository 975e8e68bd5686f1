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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/store"
	"lightbox/tasks"
)

// exportTTL is how long an export's file is kept once built; the sweeper
// deletes it afterwards.
const exportTTL = 7 * 24 * time.Hour

const maxExportAssets = 10_000

// Bounds of the settings a user may override.
const (
	minExportEdge, maxExportEdge = 320, 8192
	minQuality, maxQuality       = 40, 100
	minPerPage, maxPerPage       = 1, 100
)

// settingKeys are every setting an export takes; each preset allows some.
var settingKeys = []string{"longEdge", "width", "height", "quality", "perPage", "includeNotReady"}

// preset is an export preset: its default settings and the settings a
// user may change.
type preset struct {
	defaults store.ExportSettings
	allowed  []string
}

// presets are the kinds of export. full_res copies the originals; web fits
// each photo in a box; the social presets fill theirs, centre-cropped; the
// contact sheet lays thumbnails out perPage to a page.
var presets = map[string]preset{
	"full_res": {store.ExportSettings{}, []string{"includeNotReady"}},
	"web": {store.ExportSettings{LongEdge: 2048, Quality: 85},
		[]string{"longEdge", "width", "height", "quality", "includeNotReady"}},
	"instagram_carousel": {store.ExportSettings{Width: 1080, Height: 1350, Quality: 90},
		[]string{"width", "height", "quality", "includeNotReady"}},
	"story_9x16": {store.ExportSettings{Width: 1080, Height: 1920, Quality: 90},
		[]string{"width", "height", "quality", "includeNotReady"}},
	"contact_sheet": {store.ExportSettings{PerPage: 24, Quality: 85},
		[]string{"perPage", "quality", "includeNotReady"}},
}

const presetNames = "full_res, web, instagram_carousel, story_9x16 or contact_sheet"

type exportJSON struct {
	ID        string          `json:"id"`
	ProjectID string          `json:"projectId"`
	BatchID   *uuid.UUID      `json:"batchId"`
	JobID     *uuid.UUID      `json:"jobId"`
	Preset    string          `json:"preset"`
	Settings  json.RawMessage `json:"settings"`
	Status    string          `json:"status"`
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
		out.Error = &errorJSON{Code: *e.ErrorCode, Message: deref(e.ErrorMessage)}
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
	errs := fieldErrors{}
	pr, ok := presets[in.Preset]
	if !ok {
		errs.add("preset", "must be "+presetNames)
	}
	settings := exportSettings(errs, in.Preset, pr, in.Settings)
	ids := exportAssetIDs(errs, in.AssetIDs)
	if err := errs.err(); err != nil {
		fail(c, err)
		return
	}
	if len(ids) > 0 {
		foreign, err := s.store.ForeignAssets(ctx, p.ID, ids)
		if err != nil {
			fail(c, err)
			return
		}
		if len(foreign) > 0 {
			fail(c, apiError(http.StatusBadRequest, "validation_failed", "%d of the assets are not in this project.", len(foreign)).
				with("fields", map[string]string{"assetIds": "must name assets of this project"}).with("assetIds", foreign))
			return
		}
	}

	exportID, jobID := uuid.New(), uuid.New()
	t := tasks.NewExport(tasks.ExportPayload{Job: tasks.Job{JobID: jobID, ProjectID: p.ID}, ExportID: exportID})
	job := store.Job{ID: jobID, ProjectID: p.ID, Type: t.Type(), Queue: tasks.QueueOf(t.Type()),
		TaskID: tasks.ExportID(exportID), Payload: t.Payload()}
	raw, _ := json.Marshal(settings)
	expires := time.Now().Add(exportTTL).UTC().Truncate(time.Second)
	e := &store.Export{ID: exportID, ProjectID: p.ID, UserID: principal(c).ID, Preset: in.Preset, Settings: raw, ExpiresAt: &expires}
	e.AssetIDs = ids
	if err := s.store.CreateExport(ctx, e, job); err != nil {
		fail(c, err)
		return
	}
	// Recorded first, enqueued after: a lost enqueue is repeated by the sweeper.
	s.jobs.Enqueue(context.WithoutCancel(ctx), []store.Job{job})
	c.JSON(http.StatusCreated, toExportJSON(e))
}

// exportSettings applies the user's settings over the preset's defaults,
// noting every problem in errs. Assets not yet ready are included unless
// the user says otherwise.
func exportSettings(errs fieldErrors, name string, pr preset, raw json.RawMessage) store.ExportSettings {
	out := pr.defaults
	out.IncludeNotReady = true
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" || pr.allowed == nil {
		return out
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil {
		errs.add("settings", "must be an object")
		return out
	}
	ints := map[string]struct {
		dst    *int
		lo, hi int
	}{
		"longEdge": {&out.LongEdge, minExportEdge, maxExportEdge},
		"width":    {&out.Width, minExportEdge, maxExportEdge},
		"height":   {&out.Height, minExportEdge, maxExportEdge},
		"quality":  {&out.Quality, minQuality, maxQuality},
		"perPage":  {&out.PerPage, minPerPage, maxPerPage},
	}
	for key, v := range in {
		field := "settings." + key
		switch n, isInt := ints[key]; {
		case !slices.Contains(settingKeys, key):
			errs.add(field, "is not a setting; settings are "+strings.Join(settingKeys, ", "))
		case !slices.Contains(pr.allowed, key):
			errs.add(field, fmt.Sprintf("does not apply to the %s preset, which takes %s", name, strings.Join(pr.allowed, ", ")))
		case isInt:
			var f float64
			if err := json.Unmarshal(v, &f); err != nil || f != math.Trunc(f) || f < float64(n.lo) || f > float64(n.hi) {
				errs.add(field, fmt.Sprintf("must be a whole number from %d to %d", n.lo, n.hi))
			} else {
				*n.dst = int(f)
			}
		default: // includeNotReady
			if err := json.Unmarshal(v, &out.IncludeNotReady); err != nil {
				errs.add(field, "must be true or false")
			}
		}
	}
	_, long := in["longEdge"]
	_, w := in["width"]
	_, h := in["height"]
	switch {
	case long && (w || h):
		errs.add("settings.longEdge", "give longEdge, or width and height, not both")
	case name == "web" && (w || h):
		// A box replaces the default long edge; a side left out is unbounded.
		out.LongEdge = 0
		if !w {
			out.Width = 0
		}
		if !h {
			out.Height = 0
		}
	}
	return out
}

// exportAssetIDs parses the asset ids of a request; nil means all.
func exportAssetIDs(errs fieldErrors, raw []string) []uuid.UUID {
	if len(raw) == 0 {
		return nil
	}
	if len(raw) > maxExportAssets {
		errs.add("assetIds", fmt.Sprintf("must list at most %d assets", maxExportAssets))
		return nil
	}
	ids := make([]uuid.UUID, len(raw))
	seen := make(map[uuid.UUID]bool, len(raw))
	for i, s := range raw {
		id, err := uuid.Parse(s)
		switch {
		case err != nil:
			errs.add(fmt.Sprintf("assetIds[%d]", i), "must be an asset id (a UUID)")
		case seen[id]:
			errs.add(fmt.Sprintf("assetIds[%d]", i), "is listed twice")
		}
		seen[id] = true
		ids[i] = id
	}
	return ids
}

// ownExport loads the caller's export named by the path; another user's
// export does not exist for this caller.
func (s *Server) ownExport(c *gin.Context) (*store.Export, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, err
	}
	return s.store.Export(c.Request.Context(), principal(c).ID, id)
}

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
	url := s.signer.URL(blob.Grant{Method: http.MethodGet, Key: *e.BlobKey, Expires: expires, ContentType: "application/zip"})
	c.JSON(http.StatusOK, gin.H{"url": url, "expiresAt": expires, "byteSize": e.ByteSize})
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
	// The job is canceled first: the worker takes a canceled job to mean a
	// canceled export, so a build that ends meanwhile cannot be kept.
	if e.BatchID != nil && (e.Status == store.JobQueued || e.Status == store.JobRunning) {
		if _, _, err := s.store.CancelBatch(ctx, *e.BatchID); err != nil {
			fail(c, err)
			return
		}
	}
	e, canceled, err := s.store.CancelExport(ctx, e.ID)
	if err != nil {
		fail(c, err)
		return
	}
	if !canceled && e.Status != store.JobCanceled {
		fail(c, apiError(http.StatusConflict, "export_finished", "The export is %s; only a queued or running export can be canceled.", e.Status).
			with("status", e.Status))
		return
	}
	s.dropTask(c, tasks.QueueOf(tasks.TypeExport), tasks.ExportID(e.ID))
	c.JSON(http.StatusOK, toExportJSON(e))
}

// dropTask removes a waiting task from the queue or cancels it while it
// runs. A task already gone is fine: the job row says it was canceled, and
// the worker checks that before and during the work.
func (s *Server) dropTask(c *gin.Context, queue, taskID string) {
	info, err := s.inspector.GetTaskInfo(queue, taskID)
	if err != nil {
		return
	}
	if info.State == asynq.TaskStateActive {
		err = s.inspector.CancelProcessing(taskID)
	} else {
		err = s.inspector.DeleteTask(queue, taskID)
	}
	if err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
		logger(c).Warn("cancel task", "task", taskID, "err", err)
	}
}
