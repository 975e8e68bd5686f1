package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/chain"
	"lightbox/jobs"
	"lightbox/store"
)

// The operators' API behind the admin page: queues, failed work across
// users, and the attestation chain. Every route sits behind requireAdmin.

type queueJSON struct {
	Name           string    `json:"name"`
	Size           int       `json:"size"`
	Pending        int       `json:"pending"`
	Active         int       `json:"active"`
	Scheduled      int       `json:"scheduled"`
	Retry          int       `json:"retry"`
	Archived       int       `json:"archived"`
	Completed      int       `json:"completed"`
	ProcessedToday int       `json:"processedToday"`
	FailedToday    int       `json:"failedToday"`
	LatencyMs      int64     `json:"latencyMs"`
	MemoryBytes    int64     `json:"memoryBytes"`
	Paused         bool      `json:"paused"`
	Timestamp      time.Time `json:"timestamp"`
}

// adminQueues lists every queue Asynq knows, plus the configured ones that
// have never held a task.
func (s *Server) adminQueues(c *gin.Context) {
	known, err := s.inspector.Queues()
	if err != nil {
		logger(c).Warn("list queues", "err", err)
		fail(c, errQueueUnavailable())
		return
	}
	names := slices.Clone(known)
	for q := range s.cfg.QueueWeights {
		if !slices.Contains(names, q) {
			names = append(names, q)
		}
	}
	slices.Sort(names)
	out := make([]queueJSON, 0, len(names))
	for _, q := range names {
		if !slices.Contains(known, q) {
			out = append(out, queueJSON{Name: q, Timestamp: time.Now().UTC()})
			continue
		}
		info, err := s.inspector.GetQueueInfo(q)
		if err != nil {
			logger(c).Warn("queue info", "queue", q, "err", err)
			fail(c, errQueueUnavailable())
			return
		}
		out = append(out, queueJSON{
			Name: q, Size: info.Size, Pending: info.Pending, Active: info.Active, Scheduled: info.Scheduled,
			Retry: info.Retry, Archived: info.Archived, Completed: info.Completed, ProcessedToday: info.Processed,
			FailedToday: info.Failed, LatencyMs: info.Latency.Milliseconds(), MemoryBytes: info.MemoryUsage,
			Paused: info.Paused, Timestamp: info.Timestamp.UTC(),
		})
	}
	c.JSON(http.StatusOK, gin.H{"items": out})
}

func errQueueUnavailable() *Error {
	return apiError(http.StatusServiceUnavailable, "queue_unavailable", "The queue does not answer; retry shortly.")
}

func (s *Server) pauseQueue(c *gin.Context)  { s.setQueuePaused(c, true) }
func (s *Server) resumeQueue(c *gin.Context) { s.setQueuePaused(c, false) }

// setQueuePaused pauses or resumes a queue; doing it twice is not an error.
func (s *Server) setQueuePaused(c *gin.Context, pause bool) {
	q := c.Param("queue")
	known, err := s.inspector.Queues()
	if err != nil {
		fail(c, errQueueUnavailable())
		return
	}
	if _, configured := s.cfg.QueueWeights[q]; !configured && !slices.Contains(known, q) {
		fail(c, apiError(http.StatusNotFound, "queue_not_found", "There is no queue %q.", q))
		return
	}
	if pause {
		err = s.inspector.PauseQueue(q)
	} else {
		err = s.inspector.UnpauseQueue(q)
	}
	// Asynq refuses to pause a paused queue and to resume a running one;
	// the caller only wants the end state.
	if err != nil && slices.Contains(known, q) {
		if info, ierr := s.inspector.GetQueueInfo(q); ierr == nil && info.Paused == pause {
			err = nil
		}
	}
	if err != nil {
		logger(c).Warn("pause queue", "queue", q, "pause", pause, "err", err)
		fail(c, errQueueUnavailable())
		return
	}
	logger(c).Info("queue state changed", "queue", q, "paused", pause, "by", principal(c).Email)
	c.JSON(http.StatusOK, gin.H{"name": q, "paused": pause})
}

type adminJobJSON struct {
	jobJSON
	Queue         string  `json:"queue"`
	TaskID        string  `json:"taskId"`
	OwnerEmail    string  `json:"ownerEmail"`
	ProjectTitle  string  `json:"projectTitle"`
	AssetFilename *string `json:"assetFilename"`
}

func toAdminJobJSON(j store.AdminJob) adminJobJSON {
	return adminJobJSON{jobJSON: toJobJSON(j.Job), Queue: j.Queue, TaskID: j.TaskID, OwnerEmail: j.OwnerEmail,
		ProjectTitle: j.ProjectTitle, AssetFilename: j.AssetFilename}
}

// adminJobs lists jobs of every user, failed ones by default, newest first.
func (s *Server) adminJobs(c *gin.Context) {
	status := store.JobStatus(c.DefaultQuery("status", string(store.JobFailed)))
	if !jobStatuses[status] {
		fail(c, app.FieldErrors{"status": "must be queued, running, done, failed or canceled"}.Err())
		return
	}
	cur, limit, err := pageParams(c)
	if err != nil {
		fail(c, err)
		return
	}
	page, err := s.store.AdminJobs(c.Request.Context(), status, cur, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toPaged(page, toAdminJobJSON))
}

// adminJob loads the job named by the path, whoever owns it.
func (s *Server) adminJob(c *gin.Context) (*store.Job, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, err
	}
	j, err := s.store.AdminJob(c.Request.Context(), id)
	if err != nil {
		return nil, err
	}
	return &j.Job, nil
}

// adminRetryJob runs one failed job again.
func (s *Server) adminRetryJob(c *gin.Context) {
	j, err := s.adminJob(c)
	if err != nil {
		fail(c, err)
		return
	}
	if j.Status != store.JobFailed {
		fail(c, apiError(http.StatusConflict, "job_not_failed", "Only a failed job can be retried; this one is %s.", j.Status))
		return
	}
	s.rerun(c, []store.Job{*j}, true)
}

// adminDeleteJob gives up on a failed job: its task leaves the queue's
// archive and the job becomes canceled, so it leaves the failed list. The
// record and the asset's error stay, for the history.
func (s *Server) adminDeleteJob(c *gin.Context) {
	j, err := s.adminJob(c)
	if err != nil {
		fail(c, err)
		return
	}
	if j.Status != store.JobFailed {
		fail(c, apiError(http.StatusConflict, "job_not_failed", "Only a failed job can be deleted; this one is %s.", j.Status))
		return
	}
	dj, err := s.jobs.DismissJob(c.Request.Context(), logger(c), j)
	if errors.Is(err, store.ErrNotFound) {
		err = apiError(http.StatusConflict, "job_not_failed", "The job is no longer failed.")
	}
	if err != nil {
		fail(c, err)
		return
	}
	logger(c).Info("failed job deleted", "job", j.ID, "by", principal(c).Email)
	c.JSON(http.StatusOK, toJobJSON(*dj))
}

type adminBatchJSON struct {
	app.BatchJSON
	OwnerEmail   string `json:"ownerEmail"`
	ProjectTitle string `json:"projectTitle"`
}

// adminBatches lists batches of every user that have failed jobs.
func (s *Server) adminBatches(c *gin.Context) {
	cur, limit, err := pageParams(c)
	if err != nil {
		fail(c, err)
		return
	}
	page, err := s.store.BatchesWithFailures(c.Request.Context(), cur, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toPaged(page, func(b store.AdminBatch) adminBatchJSON {
		return adminBatchJSON{BatchJSON: app.BatchJSONOf(&b.Batch), OwnerEmail: b.OwnerEmail, ProjectTitle: b.ProjectTitle}
	}))
}

// adminRetryBatch runs every failed job of any user's batch again.
func (s *Server) adminRetryBatch(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if ok, err := s.store.AdminBatchExists(c.Request.Context(), id); err != nil || !ok {
		fail(c, cmp.Or(err, error(errNotFound())))
		return
	}
	jobs, err := s.store.FailedJobs(c.Request.Context(), id, nil)
	if err != nil {
		fail(c, err)
		return
	}
	s.rerun(c, jobs, false)
}

// rerun runs failed jobs again (see jobs.Dispatcher.Rerun) and answers
// (answerRerun).
func (s *Server) rerun(c *gin.Context, failed []store.Job, one bool) {
	retried, dups, err := s.jobs.Rerun(c.Request.Context(), logger(c), failed)
	if err != nil {
		fail(c, err)
		return
	}
	s.answerRerun(c, retried, dups, one)
}

// answerRerun notes who asked to run failed jobs again, and answers 202
// with the jobs that run again and those whose asset was uploaded again
// meanwhile. When one job was asked for and cannot run again for that
// reason, the answer is a 409.
func (s *Server) answerRerun(c *gin.Context, retried []uuid.UUID, dups []jobs.Duplicate, one bool) {
	logger(c).Info("failed jobs retried", "jobs", len(retried), "duplicates", len(dups), "by", principal(c).Email)
	if one && len(dups) == 1 {
		fail(c, errDuplicate(dups[0].DuplicateOf))
		return
	}
	body := gin.H{"retriedJobs": retried}
	if len(dups) > 0 {
		body["duplicates"] = dups
	}
	c.JSON(http.StatusAccepted, body)
}

// errDuplicate refuses to run a failed asset again whose bytes were
// uploaded again as another asset.
func errDuplicate(of uuid.UUID) *Error {
	return apiError(http.StatusConflict, "duplicate",
		"The same photo was uploaded again as asset %s, which is kept; this one cannot run again.", of).with("duplicateOf", of)
}

// lastVerifyKey keeps the outcome of the last chain verification run from
// the admin page; it is a convenience, so Redis (not Postgres) holds it.
const lastVerifyKey = "lightbox:admin:chain-last-verify"

type verifyRunJSON struct {
	chain.VerifyResult
	At         time.Time `json:"at"`
	DurationMs int64     `json:"durationMs"`
	By         string    `json:"by"`
}

// adminChain shows the chain head, the attestation queue and the last verify.
func (s *Server) adminChain(c *gin.Context) {
	ctx := c.Request.Context()
	head, err := chain.ReadHead(ctx, s.store)
	if err != nil {
		fail(c, err)
		return
	}
	queue, err := chain.CountQueue(ctx, s.store)
	if err != nil {
		fail(c, err)
		return
	}
	var last *verifyRunJSON
	if b, err := s.rdb.Get(ctx, lastVerifyKey).Bytes(); err == nil {
		last = &verifyRunJSON{}
		if json.Unmarshal(b, last) != nil {
			last = nil
		}
	}
	c.JSON(http.StatusOK, gin.H{"head": head, "keys": s.chainKeys.Describe(), "queue": queue, "lastVerify": last})
}

// adminVerifyChain checks the whole chain now and keeps the outcome.
func (s *Server) adminVerifyChain(c *gin.Context) {
	release, err := s.oneVerification(c)
	if err != nil {
		fail(c, err)
		return
	}
	defer release()
	start := time.Now()
	res, err := chain.Verify(c.Request.Context(), s.store, s.chainKeys, 0, 0)
	if err != nil {
		fail(c, err)
		return
	}
	s.metrics.verifications.WithLabelValues("ran").Inc()
	run := verifyRunJSON{VerifyResult: res, At: start.UTC().Truncate(time.Second),
		DurationMs: time.Since(start).Milliseconds(), By: principal(c).Email}
	b, _ := json.Marshal(run)
	if err := s.rdb.Set(context.WithoutCancel(c.Request.Context()), lastVerifyKey, b, 0).Err(); err != nil {
		logger(c).Warn("keep last verify", "err", err)
	}
	c.JSON(http.StatusOK, run)
}

// adminRequeueChain queues abandoned attestations again, those of the
// assets named or all of them, and starts a flush.
func (s *Server) adminRequeueChain(c *gin.Context) {
	var body struct {
		AssetIDs []uuid.UUID `json:"assetIds"`
	}
	if c.Request.ContentLength != 0 {
		if err := decodeJSON(c, &body); err != nil {
			fail(c, err)
			return
		}
	}
	n, err := chain.RequeueAbandoned(c.Request.Context(), s.store, body.AssetIDs)
	if err != nil {
		fail(c, err)
		return
	}
	if n > 0 {
		ctx, cancel := jobs.AfterCommit(c.Request.Context())
		defer cancel()
		if err := s.jobs.FlushChain(ctx); err != nil {
			// The sweeper starts a flush for any pending item.
			logger(c).Warn("enqueue chain flush", "err", err)
		}
	}
	logger(c).Info("abandoned attestations queued again", "count", n, "by", principal(c).Email)
	c.JSON(http.StatusOK, gin.H{"requeued": n})
}
