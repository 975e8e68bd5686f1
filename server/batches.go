package server

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/ptr"
	"lightbox/store"
)

func (s *Server) ownBatch(c *gin.Context) (*store.Batch, error) { return owned(c, s.store.Batch) }

// getBatch is the polling fallback of the batch's event stream.
func (s *Server) getBatch(c *gin.Context) {
	b, err := s.ownBatch(c)
	if err != nil {
		fail(c, err)
		return
	}
	jobs, err := s.store.BatchJobs(c.Request.Context(), b.ID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"batch": app.BatchJSONOf(b), "jobs": toJobsJSON(jobs)})
}

// batchResults says, per job, what it produced: the asset it worked on and
// where that asset stands.
func (s *Server) batchResults(c *gin.Context) {
	b, err := s.ownBatch(c)
	if err != nil {
		fail(c, err)
		return
	}
	jobs, err := s.store.BatchJobs(c.Request.Context(), b.ID)
	if err != nil {
		fail(c, err)
		return
	}
	type result struct {
		JobID  string          `json:"jobId"`
		Type   string          `json:"type"`
		Status store.JobStatus `json:"status"`
		Error  *errorJSON      `json:"error"`
		Asset  *assetJSON      `json:"asset"`
	}
	out := make([]result, len(jobs))
	for i, j := range jobs {
		out[i] = result{JobID: j.ID.String(), Type: j.Type, Status: j.Status}
		if j.ErrorCode != nil {
			out[i].Error = &errorJSON{Code: *j.ErrorCode, Message: ptr.Value(j.ErrorMessage)}
		}
		if j.AssetID != nil {
			if a, err := s.store.AssetByID(c.Request.Context(), *j.AssetID); err == nil {
				aj := s.toAssetJSON(c.Request.Context(), *a)
				out[i].Asset = &aj
			}
		}
	}
	c.JSON(http.StatusOK, gin.H{"batch": app.BatchJSONOf(b), "results": out})
}

// cancelBatch cancels the batch's jobs that have not ended (see
// jobs.Dispatcher.CancelBatch).
func (s *Server) cancelBatch(c *gin.Context) {
	b, err := s.ownBatch(c)
	if err != nil {
		fail(c, err)
		return
	}
	canceled, nb, err := s.app.CancelBatch(c.Request.Context(), logger(c), b.ProjectID, b.ID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"batch": app.BatchJSONOf(nb), "canceledJobs": canceled})
}

func (s *Server) retryBatch(c *gin.Context) { s.retry(c, nil) }

func (s *Server) retryJob(c *gin.Context) {
	id, err := pathID(c, "jobId")
	if err != nil {
		fail(c, err)
		return
	}
	s.retry(c, &id)
}

// retry runs a batch's failed jobs again (see app.App.RetryJobs and
// answerRerun).
func (s *Server) retry(c *gin.Context, only *uuid.UUID) {
	b, err := s.ownBatch(c)
	if err != nil {
		fail(c, err)
		return
	}
	failed, err := s.store.FailedJobs(c.Request.Context(), b.ID, only)
	if err != nil {
		fail(c, err)
		return
	}
	if only != nil && len(failed) == 0 {
		fail(c, s.whyNotRetried(c, b.ID, *only))
		return
	}
	retried, dups, err := s.app.RetryJobs(c.Request.Context(), logger(c), principal(c).ID, b.ID, failed)
	if err != nil {
		fail(c, err)
		return
	}
	s.answerRerun(c, retried, dups, only != nil)
}

// whyNotRetried is the refusal of job, which is not a failed job of batch:
// 404 when the batch has no such job, 409 when it did not fail.
func (s *Server) whyNotRetried(c *gin.Context, batch, job uuid.UUID) error {
	j, err := s.store.JobByID(c.Request.Context(), job)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && (j.BatchID == nil || *j.BatchID != batch):
		return apiError(http.StatusNotFound, "not_found", "This batch has no such job.")
	case err != nil:
		return err
	}
	return apiError(http.StatusConflict, "job_not_failed", "Only a failed job of this batch can be retried; this one is %s.", j.Status)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
