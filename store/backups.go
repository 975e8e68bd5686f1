package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"
)

// BackupStatus is where a scheduled backup run stands.
type BackupStatus string

const (
	// BackupRunning: the worker took the backup lock and began; a row
	// left so is a run whose worker died.
	BackupRunning BackupStatus = "running"
	// BackupDone: the backup's manifest is written.
	BackupDone BackupStatus = "done"
	// BackupFailed: the backup or the prune after it failed; Error says why.
	BackupFailed BackupStatus = "failed"
)

// BackupRun is one run of the scheduled backup.
type BackupRun struct {
	ID         uuid.UUID    `db:"id"`
	StartedAt  time.Time    `db:"started_at"`
	FinishedAt *time.Time   `db:"finished_at"`
	Status     BackupStatus `db:"status"`
	Location   string       `db:"location"`
	BackupID   *string      `db:"backup_id"`
	// Bytes is the size of everything the backup names (Manifest.Bytes);
	// FilesCopied the files it had to copy.
	Bytes       int64  `db:"bytes"`
	FilesCopied int    `db:"files_copied"`
	Error       string `db:"error"`
}

// BackupRunAbandoned is the error of a run whose worker stopped before
// the run ended.
const BackupRunAbandoned = "the worker taking this backup stopped before it ended"

// StartBackupRun records a run beginning. The caller holds the backup
// lock, so a run still marked running is one whose worker died: it is
// closed as failed, and returned so it can be told.
func (s *Store) StartBackupRun(ctx context.Context, location string) (uuid.UUID, []BackupRun, error) {
	id := uuid.New()
	var abandoned []BackupRun
	err := s.db.SelectContext(ctx, &abandoned, `
		UPDATE backup_runs SET finished_at = now(), status = 'failed', error = $1
		WHERE status = 'running' RETURNING *`, BackupRunAbandoned)
	if err != nil {
		return uuid.Nil, nil, err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO backup_runs (id, location) VALUES ($1, $2)`, id, location)
	return id, abandoned, err
}

// FinishBackupRun records a run's end and returns it: done with its
// backup, or failed when errText is set. A backup whose prune then failed
// is failed and still names its backup.
func (s *Store) FinishBackupRun(ctx context.Context, id uuid.UUID, backupID string, bytes int64, filesCopied int, errText string) (*BackupRun, error) {
	status := BackupDone
	if errText != "" {
		status = BackupFailed
	}
	var r BackupRun
	err := s.db.GetContext(ctx, &r, `
		UPDATE backup_runs SET finished_at = now(), status = $2, backup_id = nullif($3, ''), bytes = $4, files_copied = $5, error = $6
		WHERE id = $1 RETURNING *`, id, status, backupID, bytes, filesCopied, errText)
	return &r, notFound(err)
}

// FailBackupRun records a run that took no backup; errText is not empty.
func (s *Store) FailBackupRun(ctx context.Context, id uuid.UUID, errText string) (*BackupRun, error) {
	return s.FinishBackupRun(ctx, id, "", 0, 0, errText)
}

// LastBackupRun is the run of status finished last; nil when none has.
func (s *Store) LastBackupRun(ctx context.Context, status BackupStatus) (*BackupRun, error) {
	var r BackupRun
	err := s.db.GetContext(ctx, &r, `SELECT * FROM backup_runs WHERE status = $1 ORDER BY finished_at DESC LIMIT 1`, status)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// CountBackupRuns counts the runs of status.
func (s *Store) CountBackupRuns(ctx context.Context, status BackupStatus) (int64, error) {
	var n int64
	err := s.db.GetContext(ctx, &n, `SELECT count(*) FROM backup_runs WHERE status = $1`, status)
	return n, err
}

// BackupRuns lists the newest runs first.
func (s *Store) BackupRuns(ctx context.Context, limit int) ([]BackupRun, error) {
	var out []BackupRun
	err := s.db.SelectContext(ctx, &out, `SELECT * FROM backup_runs ORDER BY started_at DESC, id LIMIT $1`, limit)
	return out, err
}
