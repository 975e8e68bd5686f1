package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAdminPageShowsBackups opens the admin page before any backup ran,
// then records a scheduled backup that succeeded and one that failed after
// it, as the worker's backup:run does, and reads them on the page: the
// schedule and location, the success's size and duration, and the
// failure's error.
func TestAdminPageShowsBackups(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(artifacts, "admin-backups-stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	to := t.TempDir()
	// New Year's Day only: the worker's own scheduler must not add a run
	// while the test reads the ones it recorded.
	const schedule = "0 3 1 1 *"
	s := startStack(t, logFile, map[string]string{"BACKUP_SCHEDULE": schedule, "BACKUP_TO": to})
	key := s.user("root@example.org", true)
	b := newBrowser(t, chrome)
	b.run("a laptop's window", chromedp.EmulateViewport(1280, 800))
	b.signIn(s.url+"/admin", key)
	b.waitJS("no backup yet", `document.querySelector('#backups')?.textContent.includes('No backup has run yet.') ?? false`)

	ctx := context.Background()
	done, _, err := s.env.Store.StartBackupRun(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.env.Store.FinishBackupRun(ctx, done, "20261130T030000Z", 2_345_678_901, 1234, ""); err != nil {
		t.Fatal(err)
	}
	failed, _, err := s.env.Store.StartBackupRun(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	failure := "the backup target " + to + " is full"
	if _, err := s.env.Store.FailBackupRun(ctx, failed, failure); err != nil {
		t.Fatal(err)
	}

	b.run("open the admin page again", chromedp.Navigate(s.url+"/admin"))
	b.waitJS("the backups' last success and last failure", `(() => {
		const text = document.querySelector('#backups')?.textContent || '';
		return text.includes('2.3 GB') && text.includes(`+strconv.Quote(failure)+`);
	})()`)
	got := b.text("#backups")
	for _, want := range []string{schedule + " (UTC)", to, "7 complete backups", "20261130T030000Z"} {
		if !strings.Contains(got, want) {
			t.Errorf("the backups section lacks %q:\n%s", want, got)
		}
	}
	if !regexp.MustCompile(`2\.3 GB in \d+ s`).MatchString(got) {
		t.Errorf("the last success shows no size and duration:\n%s", got)
	}
	if !eval[bool](b, `document.querySelector('#backups .error')?.textContent.includes(`+strconv.Quote(failure)+`) ?? false`) {
		t.Errorf("a failure since the last success is not shown as an error:\n%s", got)
	}
	eval[bool](b, `(document.querySelector('#backups-h').scrollIntoView(), true)`)
	b.viewShot("admin-backups")
}
