package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/testsupport/testenv"
)

// backupsReply is GET /v1/admin/backups's answer.
type backupsReply struct {
	Schedule, Location       *string
	Keep                     int
	LastSuccess, LastFailure *backupRunReply
	Runs                     []backupRunReply
}

type backupRunReply struct {
	ID               string
	StartedAt        time.Time
	FinishedAt       *time.Time
	Status, Location string
	BackupID, Error  *string
	Bytes            int64
	FilesCopied      int
}

// TestAdminBackups records runs as the worker's backup:run does and reads
// them back from the admin route: the settings, the last success and the
// last failure, and the newest 10 runs, newest first.
func TestAdminBackups(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{
		"BACKUP_SCHEDULE": "0 3 * * *", "BACKUP_TO": dir, "BACKUP_KEEP": "3"}})
	admin := a.user("root@example.org", true)
	ana := a.user("ana@example.org", false)

	expect(t, a.do("GET", "/v1/admin/backups", "", nil), 401, "unauthenticated")
	expect(t, a.do("GET", "/v1/admin/backups", ana, nil), 403, "forbidden")
	r := a.do("GET", "/v1/admin/backups", admin, nil)
	expect(t, r, 200, "")
	got := decode[backupsReply](t, r)
	if got.Schedule == nil || *got.Schedule != "0 3 * * *" || got.Location == nil || *got.Location != dir || got.Keep != 3 ||
		got.LastSuccess != nil || got.LastFailure != nil || got.Runs == nil || len(got.Runs) != 0 {
		t.Fatalf("before any run: %s", r.body)
	}

	ctx := context.Background()
	st := env.Store
	start := func() uuid.UUID {
		t.Helper()
		id, _, err := st.StartBackupRun(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	// Older runs, to fill the list past its 10.
	for i := range 10 {
		if _, err := st.FinishBackupRun(ctx, start(), "older", int64(i), i, ""); err != nil {
			t.Fatal(err)
		}
	}
	done := start()
	if _, err := st.FinishBackupRun(ctx, done, "20261130T030000Z", 2_345_678_901, 42, ""); err != nil {
		t.Fatal(err)
	}
	failed := start()
	if _, err := st.FailBackupRun(ctx, failed, "the backup target "+dir+" is full"); err != nil {
		t.Fatal(err)
	}
	running := start()

	r = a.do("GET", "/v1/admin/backups", admin, nil)
	expect(t, r, 200, "")
	got = decode[backupsReply](t, r)
	s := got.LastSuccess
	if s == nil || s.ID != done.String() || s.Status != "done" || s.Location != dir || s.BackupID == nil ||
		*s.BackupID != "20261130T030000Z" || s.Bytes != 2_345_678_901 || s.FilesCopied != 42 || s.Error != nil ||
		s.FinishedAt == nil || s.FinishedAt.Before(s.StartedAt) || time.Since(s.StartedAt) > time.Hour {
		t.Fatalf("last success: %s", r.body)
	}
	f := got.LastFailure
	if f == nil || f.ID != failed.String() || f.Status != "failed" || f.BackupID != nil || f.Error == nil ||
		*f.Error != "the backup target "+dir+" is full" || f.FinishedAt == nil {
		t.Fatalf("last failure: %s", r.body)
	}
	if len(got.Runs) != 10 {
		t.Fatalf("%d runs, want the newest 10: %s", len(got.Runs), r.body)
	}
	if got.Runs[0].ID != running.String() || got.Runs[0].Status != "running" || got.Runs[0].FinishedAt != nil ||
		got.Runs[1].ID != failed.String() || got.Runs[2].ID != done.String() {
		t.Fatalf("runs are not newest first: %s", r.body)
	}
	for i := 1; i < len(got.Runs); i++ {
		if got.Runs[i].StartedAt.After(got.Runs[i-1].StartedAt) {
			t.Fatalf("run %d started after the one before it: %s", i, r.body)
		}
	}
}

// Without BACKUP_SCHEDULE backups are off: no schedule, no location, the
// default keep, and no run.
func TestAdminBackupsOff(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	admin := a.user("root@example.org", true)
	expect(t, a.do("GET", "/v1/admin/backups", a.user("ana@example.org", false), nil), 403, "forbidden")
	r := a.do("GET", "/v1/admin/backups", admin, nil)
	expect(t, r, 200, "")
	v := r.json(t)
	for _, k := range []string{"schedule", "location", "lastSuccess", "lastFailure"} {
		if x, ok := v[k]; !ok || x != nil {
			t.Errorf("%s is %v, want null: %s", k, x, r.body)
		}
	}
	if v["keep"] != float64(7) {
		t.Errorf("keep %v, want the default 7", v["keep"])
	}
	if runs, ok := v["runs"].([]any); !ok || len(runs) != 0 {
		t.Errorf("runs %v, want []", v["runs"])
	}
}
