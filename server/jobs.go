package server

import (
	"cmp"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gin-gonic/gin"

	"lightbox/app"
	"lightbox/ptr"
	"lightbox/store"
	"lightbox/tasks"
)

type jobJSON struct {
	ID        string          `json:"id"`
	ProjectID string          `json:"projectId"`
	AssetID   *string         `json:"assetId"`
	BatchID   *string         `json:"batchId"`
	Type      string          `json:"type"`
	Status    store.JobStatus `json:"status"`
	Progress  float64         `json:"progress"`
	Attempt   int             `json:"attempt"`
	// Error is the message and ErrorCode the stable code of the last
	// failure: the KILO SDK reads error as a string.
	Error     *string    `json:"error"`
	ErrorCode *string    `json:"errorCode"`
	NextRunAt *time.Time `json:"nextRunAt"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
}

func toJobJSON(j store.Job) jobJSON {
	out := jobJSON{ID: j.ID.String(), ProjectID: j.ProjectID.String(), Type: j.Type, Status: j.Status,
		Progress: j.Progress, Attempt: j.Attempt, NextRunAt: j.NextRunAt, CreatedAt: j.CreatedAt.UTC(), UpdatedAt: j.UpdatedAt.UTC()}
	if j.AssetID != nil {
		s := j.AssetID.String()
		out.AssetID = &s
	}
	if j.BatchID != nil {
		s := j.BatchID.String()
		out.BatchID = &s
	}
	if j.ErrorCode != nil {
		msg := cmp.Or(ptr.Value(j.ErrorMessage), *j.ErrorCode)
		out.Error, out.ErrorCode = &msg, j.ErrorCode
	}
	return out
}

var jobStatuses = map[store.JobStatus]bool{store.JobQueued: true, store.JobRunning: true, store.JobDone: true, store.JobFailed: true, store.JobCanceled: true}

func (s *Server) listJobs(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if _, err := s.store.Project(c.Request.Context(), principal(c).ID, id); err != nil {
		fail(c, err)
		return
	}
	f := store.JobFilter{Status: store.JobStatus(c.Query("status")), Type: c.Query("type")}
	errs := app.FieldErrors{}
	if f.Status != "" && !jobStatuses[f.Status] {
		errs.Add("status", "must be queued, running, done, failed or canceled")
	}
	if f.Type != "" && !tasks.HasJob(f.Type) {
		errs.Add("type", "must be one of "+strings.Join(tasks.JobTypes(), ", "))
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	cur, limit, err := pageParams(c)
	if err != nil {
		fail(c, err)
		return
	}
	page, err := s.store.Jobs(c.Request.Context(), id, f, cur, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toPaged(page, toJobJSON))
}

// jobIDs are the ids of jobs, as answers name the work a request queued.
func jobIDs(jobs []store.Job) []uuid.UUID {
	ids := make([]uuid.UUID, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

func toJobsJSON(jobs []store.Job) []jobJSON {
	out := make([]jobJSON, len(jobs))
	for i, j := range jobs {
		out[i] = toJobJSON(j)
	}
	return out
}

// assetJobs lists the jobs of one of the caller's assets, for the photo
// details page.
func (s *Server) assetJobs(c *gin.Context) {
	a, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	jobs, err := s.store.AssetJobs(c.Request.Context(), a.ID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"items": toJobsJSON(jobs)})
}
