package server

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/render"
	"lightbox/store"
)

// maxEditTargets is how many assets one applyTo renders onto.
const maxEditTargets = 1000

type editJSON struct {
	ID        uuid.UUID       `json:"id"`
	AssetID   uuid.UUID       `json:"assetId"`
	UserID    uuid.UUID       `json:"userId"`
	ParentID  *uuid.UUID      `json:"parentId"`
	Name      string          `json:"name"`
	Params    json.RawMessage `json:"params"`
	AppliedAt *time.Time      `json:"appliedAt"` // when its render was stored; null while it is being made
	CreatedAt time.Time       `json:"createdAt"`
	// JobID is the job rendering it, in answers that started one.
	JobID *uuid.UUID `json:"jobId,omitempty"`
}

func toEditJSON(e store.EditVersion) editJSON {
	return editJSON{ID: e.ID, AssetID: e.AssetID, UserID: e.UserID, ParentID: e.ParentID, Name: e.Name, Params: e.Params,
		AppliedAt: e.AppliedAt, CreatedAt: e.CreatedAt.UTC()}
}

func (s *Server) listEdits(c *gin.Context) {
	a, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	versions, err := s.store.EditVersions(c.Request.Context(), a.ID)
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]editJSON, len(versions))
	for i, v := range versions {
		out[i] = toEditJSON(v)
	}
	c.JSON(http.StatusOK, gin.H{"items": out})
}

func (s *Server) getEdit(c *gin.Context) {
	v, err := s.ownEdit(c)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toEditJSON(*v))
}

func (s *Server) ownEdit(c *gin.Context) (*store.EditVersion, error) {
	return owned(c, s.store.EditVersion)
}

// checkEditName checks a version's name, which may be empty.
func checkEditName(errs app.FieldErrors, name string) string {
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > maxTitleLen {
		errs.Add("name", "must be at most 200 characters")
	}
	return name
}

// createEdit adds a version to an asset and renders it.
func (s *Server) createEdit(c *gin.Context) {
	a, err := s.ownAsset(c)
	if err == nil {
		err = notProcessable(a, "edited")
	}
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		Name     string          `json:"name"`
		ParentID *uuid.UUID      `json:"parentId"`
		Params   json.RawMessage `json:"params"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	name := checkEditName(errs, in.Name)
	params := s.editParams(errs, in.Params, a)
	if in.ParentID != nil {
		if p, err := s.store.EditVersion(c.Request.Context(), principal(c).ID, *in.ParentID); err != nil || p.AssetID != a.ID {
			errs.Add("parentId", "must be a version of this asset")
		}
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	versions, jobs := s.applyEdits(c, a.ProjectID, []store.EditTarget{{AssetID: a.ID, Name: name, ParentID: in.ParentID, Params: params}})
	if versions == nil {
		return
	}
	out := toEditJSON(versions[0])
	out.JobID = &jobs[0].ID
	c.JSON(http.StatusCreated, out)
}

// applyEditTo renders a version's params onto other assets of its project:
// a new version on each, or each one's latest changed. The assets are one
// batch, followed like any other.
func (s *Server) applyEditTo(c *gin.Context) {
	v, err := s.ownEdit(c)
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		AssetIDs []string `json:"assetIds"`
		Mode     string   `json:"mode"`
		Name     *string  `json:"name"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	ids := parseAssetIDs(errs, in.AssetIDs, maxEditTargets)
	if len(in.AssetIDs) == 0 {
		errs.Add("assetIds", "must list 1 to 1000 assets")
	}
	if in.Mode == "" {
		in.Mode = "create_versions" // the KILO SDK's mode is optional
	}
	if in.Mode != "create_versions" && in.Mode != "overwrite_latest" {
		errs.Add("mode", "must be create_versions or overwrite_latest")
	}
	name := v.Name
	if in.Name != nil {
		name = checkEditName(errs, *in.Name)
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	targets := make([]store.EditTarget, len(ids))
	for i, id := range ids {
		targets[i] = store.EditTarget{AssetID: id, Overwrite: in.Mode == "overwrite_latest", Name: name, Params: v.Params}
	}
	versions, jobs := s.applyEdits(c, v.ProjectID, targets)
	if versions == nil {
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"jobId": jobs[0].ID, "batchId": jobs[0].BatchID, "status": store.JobQueued})
}

// applyEdits records the targets' versions and a batch of their render
// jobs. It answers the request itself on failure, returning nil.
func (s *Server) applyEdits(c *gin.Context, project uuid.UUID, targets []store.EditTarget) ([]store.EditVersion, []store.Job) {
	ctx := c.Request.Context()
	versions, rows, err := s.app.ApplyEdits(ctx, logger(c), principal(c).ID, project, targets)
	var without *store.NoOriginalError
	if errors.As(err, &without) {
		err = apiError(http.StatusConflict, "not_processable",
			"%d of the assets have no finalized original to edit; nothing was changed.", len(without.IDs)).with("assetIds", without.IDs)
	}
	if err != nil {
		fail(c, foreignAssets(err, "assetIds"))
		return nil, nil
	}
	return versions, rows
}

// editParams checks params for asset a and returns them as stored: the
// parsed values, so unknown spellings never reach the table. A crop must
// hold at least a pixel of the photo as ingest measured it, or, before
// ingest has, of the longest photo MAX_PIXELS lets in (1 × MAX_PIXELS).
func (s *Server) editParams(errs app.FieldErrors, raw json.RawMessage, a *store.Asset) json.RawMessage {
	if len(raw) == 0 {
		errs.Add("params", "is required")
		return nil
	}
	e, problems := render.ParseEdit(raw)
	width, height := s.cfg.MaxPixels, s.cfg.MaxPixels
	if a.WidthPx != nil && a.HeightPx != nil {
		width, height = int64(*a.WidthPx), int64(*a.HeightPx)
	}
	maps.Copy(problems, render.CheckCropPixels(e, width, height))
	for field, problem := range problems {
		errs.Add(field, problem)
	}
	out, _ := json.Marshal(e)
	return out
}
