package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/app"
	"lightbox/backup"
	"lightbox/blob"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
	"lightbox/worker"
)

// backupHarness is a worker whose scheduled backups go to dir, with two
// photos stored and finalized; vars adds to its settings.
func backupHarness(t *testing.T, dir string, vars map[string]string) *harness {
	t.Helper()
	all := map[string]string{"BACKUP_SCHEDULE": "@every 1h", "BACKUP_TO": dir, "BACKUP_KEEP": "2"}
	maps.Copy(all, vars)
	h := newHarness(t, all)
	project := h.project()
	uploads := testenv.Files(2)
	for i := range uploads {
		uploads[i].ID = uuid.New()
		if _, err := h.blobs.Put(context.Background(), blob.OriginalKey(project, uploads[i].ID), bytes.NewReader(uploads[i].Data),
			int64(len(uploads[i].Data))); err != nil {
			t.Fatal(err)
		}
	}
	h.env.Finalize(t, h.owner, project, uploads...)
	return h
}

// runBackup runs one backup:run task as the worker would.
func (h *harness) runBackup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	return h.w.Handler().ProcessTask(ctx, tasks.NewBackup())
}

func (h *harness) backupRuns() []store.BackupRun {
	h.t.Helper()
	runs, err := h.env.Store.BackupRuns(context.Background(), 100)
	if err != nil {
		h.t.Fatal(err)
	}
	return runs
}

// TestScheduledBackup runs the backup task three times: each run is
// recorded done, the second copies nothing, and the third prunes the
// target to BACKUP_KEEP. A run that finds another holding the lock ends
// without error or record.
func TestScheduledBackup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := backupHarness(t, dir, nil)

	for i := range 3 {
		if err := h.runBackup(); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	runs := h.backupRuns() // newest first
	if len(runs) != 3 {
		t.Fatalf("%d runs recorded, want 3", len(runs))
	}
	first, second := runs[2], runs[1]
	for _, r := range runs {
		if r.Status != store.BackupDone || r.Bytes <= 0 || r.BackupID == nil || r.FinishedAt == nil || r.Error != "" || r.Location != dir {
			t.Errorf("run %+v; want done, with its backup and size", r)
		}
	}
	if first.FilesCopied != 2 || second.FilesCopied != 0 {
		t.Errorf("files copied %d then %d; want the 2 originals, then none", first.FilesCopied, second.FilesCopied)
	}

	tg, err := backup.OpenTarget(context.Background(), backup.Location{Dir: dir}, blob.S3Config{}, false)
	if err != nil {
		t.Fatal(err)
	}
	l, err := backup.List(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Complete) != 2 || l.Complete[0].ID != *second.BackupID || l.Complete[1].ID != *runs[0].BackupID || len(l.Incomplete) != 0 {
		t.Fatalf("the target holds %d complete backups (incomplete %v); want the newest 2", len(l.Complete), l.Incomplete)
	}

	// Another worker's backup holds the lock.
	lock, err := redislock.New(h.env.Redis).Obtain(context.Background(), worker.BackupLock, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.runBackup(); err != nil {
		t.Errorf("a run beside another: %v, want it to end without error", err)
	}
	if n := len(h.backupRuns()); n != 3 {
		t.Errorf("a run beside another recorded itself: %d runs", n)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestScheduledBackupFails: a target that cannot be written (a file where
// its backups folder goes) records a failed run with its error, ends the
// task for good rather than retrying it, tells the administrator's
// webhook, and leaves the next run free. The next run closes a run a dead
// worker left running, and tells that too.
func TestScheduledBackupFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := backupHarness(t, dir, map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32"})
	const secret = "a-secret-of-some-length"
	admin, err := h.env.Store.CreateUser(context.Background(), "root@example.org", true)
	if err != nil {
		t.Fatal(err)
	}
	told := newReceiver(t, secret)
	hook := store.Webhook{ID: uuid.New(), UserID: admin.ID, URL: told.srv.URL, Events: []string{app.EventBackupFailed}, Secret: secret}
	if err := h.env.Store.CreateWebhook(context.Background(), &hook, 25); err != nil {
		t.Fatal(err)
	}
	// Not an administrator's: the API refuses it the event, and a user
	// who is not one hears nothing of the service's backups.
	untold := newReceiver(t, secret)
	h.webhook(untold.srv.URL, secret, app.EventBackupFailed)
	h.run()

	blocker := filepath.Join(dir, "backups")
	if err := os.WriteFile(blocker, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = h.runBackup()
	if err == nil || !errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("a backup to a broken target: %v; want it failed without retries", err)
	}
	runs := h.backupRuns()
	if len(runs) != 1 || runs[0].Status != store.BackupFailed || runs[0].Error == "" || runs[0].FinishedAt == nil || runs[0].BackupID != nil {
		t.Fatalf("runs %+v; want one failed, with its error", runs)
	}
	t.Logf("recorded: %s", runs[0].Error)
	failed := runs[0]
	testenv.Eventually(t, "the failure told", patience, func() bool { return len(told.deliveries()) == 1 })
	checkBackupFailed(t, told.deliveries()[0], failed, dir)

	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	// A worker that died mid-backup left its run running.
	if _, _, err := h.env.Store.StartBackupRun(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if err := h.runBackup(); err != nil {
		t.Fatalf("the next run: %v", err)
	}
	runs = h.backupRuns()
	if len(runs) != 3 || runs[0].Status != store.BackupDone || runs[0].FilesCopied != 2 {
		t.Fatalf("runs %+v; want the third done", runs)
	}
	abandoned := runs[1]
	if abandoned.Status != store.BackupFailed || abandoned.Error != store.BackupRunAbandoned || abandoned.FinishedAt == nil {
		t.Fatalf("the dead worker's run: %+v; want it closed as failed", abandoned)
	}
	testenv.Eventually(t, "the abandoned run told", patience, func() bool { return len(told.deliveries()) == 2 })
	checkBackupFailed(t, told.deliveries()[1], abandoned, dir)
	// The webhook jobs have ended, so nothing else is coming to anyone.
	testenv.Eventually(t, "the deliveries' jobs to end", patience, func() bool {
		return h.count(`SELECT count(*) FROM jobs WHERE type = 'webhook:deliver' AND status NOT IN ('done', 'failed')`) == 0
	})
	if n := len(told.deliveries()); n != 2 {
		t.Errorf("the administrator's webhook heard %d deliveries, want 2", n)
	}
	if got := untold.deliveries(); len(got) != 0 {
		t.Errorf("a user's webhook heard of the service's backups: %+v", got)
	}
}

// checkBackupFailed checks a backup.failed delivery tells of run.
func checkBackupFailed(t *testing.T, got received, run store.BackupRun, dir string) {
	t.Helper()
	var data app.BackupFailedData
	if err := json.Unmarshal(got.Data, &data); err != nil {
		t.Fatal(err)
	}
	if got.Event != app.EventBackupFailed || data.RunID != run.ID || data.Location != dir || data.Error != run.Error ||
		data.BackupID != nil || !data.StartedAt.Equal(run.StartedAt) || !data.FinishedAt.Equal(*run.FinishedAt) {
		t.Errorf("delivered %s %s; want run %+v told", got.Event, got.Data, run)
	}
}
