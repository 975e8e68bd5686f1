package worker

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/bsm/redislock"
	"github.com/hibiken/asynq"

	"lightbox/backup"
	"lightbox/chain"
	"lightbox/tasks"
)

// BackupLock is the Redis key a scheduled backup holds while it runs,
// shared by every worker: one backup at a time, even when one overruns
// its period.
const BackupLock = "lightbox:backup-lock"

// backupLockTTL bounds how long a worker that died holding the lock keeps
// it; a live run renews it every third of it.
const backupLockTTL = time.Minute

func init() { handle(tasks.TypeBackup, (*Worker).runBackup) }

// runBackup takes a backup to BACKUP_TO and prunes it to BACKUP_KEEP,
// recording the run in backup_runs. A run that finds another running ends
// at once. A failure is told to the administrators' webhooks subscribed
// to backup.failed. A failed run is recorded and not retried (the next period's
// tries again): the outage middleware would otherwise repeat a backup to a
// full target every few seconds.
func (w *Worker) runBackup(ctx context.Context, _ *asynq.Task) error {
	b := w.cfg.Backups
	if b.Schedule == "" {
		// Queued before the schedule was turned off.
		w.log.Info("backup: BACKUP_SCHEDULE is off; a queued run ends")
		return nil
	}
	ctx, release, err := w.holdBackupLock(ctx)
	if errors.Is(err, redislock.ErrNotObtained) {
		w.log.Info("backup: another backup is running; this run ends")
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup lock: %w", err)
	}
	defer release()

	run, err := w.app.StartBackupRun(ctx, b.To.String())
	if err != nil {
		return err
	}
	// The run's end is recorded even when its context ended.
	record := context.WithoutCancel(ctx)
	start := time.Now()
	rep, err := w.takeBackup(ctx)
	if err != nil {
		if rerr := w.app.FinishBackupRun(record, run, "", 0, 0, err.Error()); rerr != nil {
			w.log.Error("backup: record the failed run", "err", rerr)
		}
		w.log.Warn("backup failed", "to", b.To.String(), "err", err)
		return tasks.Permanent(fmt.Errorf("backup to %s: %w", b.To, err))
	}
	m := rep.Manifest
	var pruneErr error
	if tg, err := backup.OpenTarget(ctx, b.To, b.ToStorage.S3Config(), false); err != nil {
		pruneErr = err
	} else if p, err := backup.Prune(ctx, tg, b.Keep); err != nil {
		pruneErr = err
	} else {
		w.log.Info("backups pruned", "deleted", len(p.Deleted), "blobs", p.Blobs, "blobBytes", p.BlobBytes, "blobsLeft", p.BlobsLeft)
	}
	errText := ""
	if pruneErr != nil {
		errText = "backup " + m.ID + " taken, then the prune failed: " + pruneErr.Error()
	}
	if err := w.app.FinishBackupRun(record, run, m.ID, m.Bytes(), rep.Copied, errText); err != nil {
		return err
	}
	w.log.Info("backup taken", "id", m.ID, "to", b.To.String(), "bytes", m.Bytes(), "copied", rep.Copied,
		"durationMs", time.Since(start).Milliseconds())
	if pruneErr != nil {
		return tasks.Permanent(errors.New(errText))
	}
	return nil
}

// takeBackup backs up the service as the CLI's backup create does, with
// the worker's own store and settings.
func (w *Worker) takeBackup(ctx context.Context) (*backup.Report, error) {
	b := w.cfg.Backups
	tg, err := backup.OpenTarget(ctx, b.To, b.ToStorage.S3Config(), true)
	if err != nil {
		return nil, err
	}
	o := backup.Options{DatabaseURL: w.cfg.DatabaseURL, Blobs: w.blobs, LedgerPath: w.cfg.LedgerPath(),
		OriginalsOnly: b.OriginalsOnly, Lightbox: buildVersion(), PGBinDir: b.PGBinDir}
	if w.flusher != nil && w.flusher.Key != nil {
		// Recorded so a restore verifies the chain without the signing key.
		keys, err := chain.NewKeys(w.flusher.Key.Public().(ed25519.PublicKey), w.cfg.ChainRetiredKeys...)
		if err != nil {
			return nil, err
		}
		o.ChainKeys = &keys
	}
	return backup.Create(ctx, tg, o)
}

// holdBackupLock takes BackupLock and renews it until release. Should the
// lock be lost (Redis lost it, or a pause outlived its TTL), the returned
// context ends: another worker may have begun a backup.
func (w *Worker) holdBackupLock(ctx context.Context) (context.Context, func(), error) {
	locks := redislock.New(w.rdb)
	lock, err := locks.Obtain(ctx, BackupLock, backupLockTTL, nil)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(backupLockTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := lock.Refresh(rctx, backupLockTTL, nil)
				rcancel()
				if errors.Is(err, redislock.ErrNotObtained) {
					cancel(errors.New("the backup lock was lost"))
					return
				}
				if err != nil {
					w.log.Warn("backup lock not renewed", "err", err)
				}
			}
		}
	}()
	return ctx, func() {
		close(done)
		<-ended
		cancel(nil)
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		if err := lock.Release(rctx); err != nil && !errors.Is(err, redislock.ErrLockNotHeld) {
			w.log.Warn("backup lock not released; it expires", "err", err)
		}
	}, nil
}

// buildVersion is the module version the worker was built from, recorded
// in each backup's manifest.
func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "devel"
}
