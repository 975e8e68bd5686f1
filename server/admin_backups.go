package server

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"lightbox/store"
)

// backupRunJSON is one run of the scheduled backup (store.BackupRun).
type backupRunJSON struct {
	ID          string             `json:"id"`
	StartedAt   time.Time          `json:"startedAt"`
	FinishedAt  *time.Time         `json:"finishedAt"`
	Status      store.BackupStatus `json:"status"`
	Location    string             `json:"location"`
	BackupID    *string            `json:"backupId"`
	Bytes       int64              `json:"bytes"`
	FilesCopied int                `json:"filesCopied"`
	// Error is null rather than "" for a run without one, as a job's is.
	Error *string `json:"error"`
}

func toBackupRunJSON(r store.BackupRun) backupRunJSON {
	out := backupRunJSON{ID: r.ID.String(), StartedAt: r.StartedAt.UTC(), Status: r.Status, Location: r.Location,
		BackupID: r.BackupID, Bytes: r.Bytes, FilesCopied: r.FilesCopied}
	if r.FinishedAt != nil {
		at := r.FinishedAt.UTC()
		out.FinishedAt = &at
	}
	if r.Error != "" {
		out.Error = &r.Error
	}
	return out
}

// adminBackupRuns is how many of the newest runs adminBackups lists.
const adminBackupRuns = 10

// adminBackups shows the scheduled backups' settings, the last run that
// succeeded, the last that failed and the newest runs. Runs are listed even
// with the schedule off: those of an earlier schedule are still history.
func (s *Server) adminBackups(c *gin.Context) {
	ctx := c.Request.Context()
	success, err := s.store.LastBackupRun(ctx, store.BackupDone)
	if err != nil {
		fail(c, err)
		return
	}
	failure, err := s.store.LastBackupRun(ctx, store.BackupFailed)
	if err != nil {
		fail(c, err)
		return
	}
	runs, err := s.store.BackupRuns(ctx, adminBackupRuns)
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]backupRunJSON, 0, len(runs))
	for _, r := range runs {
		out = append(out, toBackupRunJSON(r))
	}
	b := s.cfg.Backups
	c.JSON(http.StatusOK, gin.H{
		"schedule": nullIfEmpty(b.Schedule), "location": nullIfEmpty(b.To.String()), "keep": b.Keep,
		"lastSuccess": optionalRun(success), "lastFailure": optionalRun(failure), "runs": out,
	})
}

func optionalRun(r *store.BackupRun) *backupRunJSON {
	if r == nil {
		return nil
	}
	out := toBackupRunJSON(*r)
	return &out
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
