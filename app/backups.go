package app

import (
	"context"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
)

// BackupFailedData is what a backup.failed delivery tells: the run, where
// it went, and why it failed. BackupID is set when the backup was taken
// and the prune after it failed.
type BackupFailedData struct {
	RunID      uuid.UUID `json:"runId"`
	Location   string    `json:"location"`
	BackupID   *string   `json:"backupId"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	Error      string    `json:"error"`
}

// StartBackupRun records a scheduled backup beginning; the caller holds
// the backup lock. A run its dead worker left running is closed as failed
// and told, in the same transaction.
func (a *App) StartBackupRun(ctx context.Context, location string) (uuid.UUID, error) {
	var id uuid.UUID
	err := a.store.WithTx(ctx, func(tx *store.Store) error {
		var abandoned []store.BackupRun
		var err error
		if id, abandoned, err = tx.StartBackupRun(ctx, location); err != nil {
			return err
		}
		return tellBackupFailed(ctx, tx, abandoned...)
	})
	return id, err
}

// FinishBackupRun records a run's end, as store.FinishBackupRun does, and
// tells a failure to the administrators' webhooks subscribed to
// backup.failed in the same transaction, so none is recorded untold.
func (a *App) FinishBackupRun(ctx context.Context, id uuid.UUID, backupID string, bytes int64, filesCopied int, errText string) error {
	return a.store.WithTx(ctx, func(tx *store.Store) error {
		r, err := tx.FinishBackupRun(ctx, id, backupID, bytes, filesCopied, errText)
		if err != nil {
			return err
		}
		return tellBackupFailed(ctx, tx, *r)
	})
}

// tellBackupFailed records, in tx, a backup.failed delivery of each failed
// run to every administrator's webhook subscribed to it.
func tellBackupFailed(ctx context.Context, tx *store.Store, runs ...store.BackupRun) error {
	var hooks []store.Webhook
	for _, r := range runs {
		if r.Status != store.BackupFailed {
			continue
		}
		if hooks == nil {
			var err error
			if hooks, err = tx.AdminWebhooks(ctx, EventBackupFailed); err != nil {
				return err
			}
		}
		data := BackupFailedData{RunID: r.ID, Location: r.Location, BackupID: r.BackupID, StartedAt: r.StartedAt.UTC(),
			Error: r.Error}
		if r.FinishedAt != nil {
			data.FinishedAt = r.FinishedAt.UTC()
		}
		if _, err := deliver(ctx, tx, hooks, uuid.Nil, EventBackupFailed, r.ID.String(), string(r.Status), data); err != nil {
			return err
		}
	}
	return nil
}
