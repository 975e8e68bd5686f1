package e2e_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/jobs"
)

// clusterRun has the worker group the project's photos, as it does
// shortly after photos become ready, and waits until the run has stored
// its groups.
func (s *stack) clusterRun(project string) {
	s.t.Helper()
	ctx := context.Background()
	pid := uuid.MustParse(project)
	run, err := s.env.Store.ScheduleCluster(ctx, pid, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	if run.New {
		opt, err := asynq.ParseRedisURI(s.env.RedisURL)
		if err != nil {
			s.t.Fatal(err)
		}
		queue := asynq.NewClient(opt)
		defer queue.Close()
		if err := jobs.New(jobs.Config{Store: s.env.Store, Queue: queue}).EnqueueClusterRun(ctx, *run); err != nil {
			s.t.Fatal(err)
		}
	}
	s.waitFor(fmt.Sprintf("grouping run %d to store its groups", run.Run), func() bool {
		return s.count(`SELECT count(*) FROM cluster_runs WHERE project_id = $1 AND done_run >= $2`, pid, run.Run) == 1
	})
}

// apiCluster is a group as the API answers it.
type apiCluster struct {
	ID            string
	Kind          string
	Title         string
	Reviewed      bool
	WinnerAssetID string
	WhyWinner     []string
	Assets        []struct {
		AssetID string
		Rank    int
		Role    string
	}
}

// TestReviewABurst reviews a burst by keys in the browser: chooses another
// photo as its best shot, titles it and marks it reviewed; then a grouping
// run replaces every group, and the page, following it, shows the burst
// with the choice kept, as the API does.
func TestReviewABurst(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key := gridStack(t, "review-stack.log")
	project := s.seeded(key, "Ceremony", 40)
	s.photoFiles(s.listIDs(key, project))
	s.clusterRun(project)
	var bursts struct{ Items []apiCluster }
	s.apiGet(key, "/v1/projects/"+project+"/clusters?kind=burst", &bursts)
	if len(bursts.Items) == 0 {
		t.Fatal("the grouping run made no burst of the seeded shoot")
	}
	burst := bursts.Items[0]
	var chosen string // the first photo of the burst that is not its best shot
	for _, m := range burst.Assets {
		if m.AssetID != burst.WinnerAssetID && chosen == "" {
			chosen = m.AssetID
		}
	}
	if chosen == "" {
		t.Fatalf("burst %s has no photo beside its best shot: %+v", burst.ID, burst.Assets)
	}

	b := newBrowser(t, chrome)
	b.logErrors()
	b.signIn(s.url+"/#/projects/"+project+"/review", key)
	b.waitJS("the first burst with its best shot drawn", `document.querySelector('#group')?.dataset.cluster === `+jsq(burst.ID)+` &&
		(() => { const i = document.querySelector('#group-winner img'); return i.complete && i.naturalWidth > 0; })()`)
	if why := b.text("#group-winner .why"); why == "" {
		t.Error("the best shot does not say why it won")
	}
	b.shot("review-01-burst")

	// Into the group's photos, then to the one to choose, by keys.
	b.run("focus the group's photos", chromedp.Focus(chromedp.CSS(`#group-members li[aria-selected="true"]`)))
	for range len(burst.Assets) {
		if eval[bool](b, `document.activeElement.dataset.asset === `+jsq(chosen)) {
			break
		}
		b.key("the next photo of the group", kb.ArrowRight)
	}
	b.waitJS("the photo to choose beside the best shot", `document.querySelector('#group-focus')?.dataset.asset === `+jsq(chosen)+` &&
		!document.querySelector('#group-focus').hidden`)
	b.shot("review-02-beside")
	b.key("make it the best shot", "w")
	b.waitJS("it shown as the best shot", `document.querySelector('#group-winner').dataset.asset === `+jsq(chosen)+` &&
		document.querySelector('#group-winner .why').textContent.includes('chosen by you')`)
	b.key("title the group", "t")
	b.waitJS("the title field to have the focus", `document.activeElement.id === 'group-title-input'`)
	// The driver sends a key's character apart from its press, which the
	// page cannot hold back as a browser does for a person: select it away.
	b.key("select the title", "a", chromedp.ModifierCtrl)
	b.run("type the title", chromedp.SendKeys(chromedp.CSS("#group-title-input"), "First kiss"+kb.Enter))
	b.waitJS("the title shown", `document.querySelector('#group-title').textContent === 'First kiss'`)
	b.run("mark it reviewed", chromedp.Click(chromedp.CSS("#group-mark")))
	b.waitJS("the group says it is reviewed", `document.querySelector('#group-reviewed').textContent === '✓ Reviewed'`)
	b.shot("review-03-chosen")

	var got apiCluster
	s.waitFor("the API to hold the review", func() bool {
		s.apiGet(key, "/v1/clusters/"+burst.ID, &got)
		return got.WinnerAssetID == chosen && got.Reviewed && got.Title == "First kiss"
	})

	// A later grouping run: the page reads the groups again by itself.
	loads := eval[int](b, `Number(document.querySelector('#group').dataset.loads)`)
	s.clusterRun(project)
	b.waitJS("the page to read the groups again", fmt.Sprintf(`Number(document.querySelector('#group').dataset.loads) > %d`, loads))
	b.waitJS("the burst still reviewed, titled, with the chosen best shot", `document.querySelector('#group').dataset.cluster === `+jsq(burst.ID)+` &&
		document.querySelector('#group-winner').dataset.asset === `+jsq(chosen)+` &&
		document.querySelector('#group-reviewed').textContent === '✓ Reviewed' && document.querySelector('#group-title').textContent === 'First kiss'`)
	s.apiGet(key, "/v1/clusters/"+burst.ID, &got)
	if got.WinnerAssetID != chosen || !got.Reviewed || got.Title != "First kiss" {
		t.Errorf("after the run the API has winner %s reviewed %v title %q; want %s, true, First kiss", got.WinnerAssetID, got.Reviewed, got.Title, chosen)
	}
	b.shot("review-04-after-run")

	// Accept the next burst's best shot with A: reviewed, and on to the one after.
	if len(bursts.Items) > 1 {
		next := bursts.Items[1]
		b.run("focus the group's photos", chromedp.Focus(chromedp.CSS(`#group-members li[aria-selected="true"]`)))
		b.key("the next group", kb.ArrowDown)
		b.waitJS("the second burst", `document.querySelector('#group').dataset.cluster === `+jsq(next.ID))
		b.key("accept its best shot", "a")
		s.waitFor("the second burst reviewed", func() bool {
			var c apiCluster
			s.apiGet(key, "/v1/clusters/"+next.ID, &c)
			return c.Reviewed && c.WinnerAssetID == next.WinnerAssetID
		})
	}

	// The overview of groups says which are reviewed, and at a phone's width
	// the review still fits.
	b.run("open the overview", chromedp.Click(chromedp.CSS("#tab-groups")))
	b.waitJS("the burst marked reviewed there", `[...document.querySelectorAll('.cluster[data-kind="burst"]')].some((c) =>
		c.querySelector('h3').textContent.startsWith('First kiss') && c.querySelector('.badge.reviewed'))`)
	b.run("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateTouch))
	b.run("back to the review", chromedp.Click(chromedp.CSS("#tab-review")))
	b.waitJS("the review drawn", `!!document.querySelector('#group:not([hidden])')`)
	if wide := eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`); wide {
		t.Error("the review is wider than a phone's screen")
	}
	b.viewShot("review-05-phone")
}
