package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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

// groupedShoot makes a project of a seeded shoot of 40 photos with their
// files, grouped, and reads its bursts.
func (s *stack) groupedShoot(key, title string) (project string, bursts struct{ Items []apiCluster }) {
	s.t.Helper()
	project = s.seeded(key, title, 40)
	s.photoFiles(s.listIDs(key, project))
	s.clusterRun(project)
	s.apiGet(key, "/v1/projects/"+project+"/clusters?kind=burst", &bursts)
	return project, bursts
}

// TestReviewABurst reviews a burst by keys in the browser: chooses another
// photo as its best shot, titles it and marks it reviewed; then a grouping
// run replaces every group, and the page, following it, shows the burst
// with the choice kept, as the API does.
func TestReviewABurst(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key := gridStack(t, "review-stack.log")
	project, bursts := s.groupedShoot(key, "Ceremony")
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

// stripFlags is, for each photo of the group shown, the flag its tile in
// the strip shows: "picked", "rejected" or "".
const stripFlags = `Object.fromEntries([...document.querySelectorAll('#group-members li')].map((li) => [li.dataset.asset, li.dataset.flag]))`

// TestReviewDecides accepts a burst's best shot with "pick the winner,
// reject the rest" on: the strip and the API show the best shot picked and
// every other photo rejected at once, and one Ctrl+Z puts them all back;
// then P and X in the review flag the photo with the focus, as in the grid.
func TestReviewDecides(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key := gridStack(t, "review-decides-stack.log")
	project, bursts := s.groupedShoot(key, "Reception")
	if len(bursts.Items) < 2 {
		t.Fatalf("the grouping run made %d bursts of the seeded shoot; want two or more", len(bursts.Items))
	}
	// The first burst of three photos or more, so that two are rejected.
	at := 0
	for at < len(bursts.Items)-1 && len(bursts.Items[at].Assets) < 3 {
		at++
	}
	if at == len(bursts.Items)-1 {
		at = 0 // the last burst has no next one to go on to
	}
	burst := bursts.Items[at]
	if len(burst.Assets) < 2 {
		t.Fatalf("burst %s has %d photos; want two or more", burst.ID, len(burst.Assets))
	}
	want := map[string]string{} // each photo's flag once the best shot is accepted
	unflagged := map[string]string{}
	for _, m := range burst.Assets {
		want[m.AssetID] = "rejected"
		unflagged[m.AssetID] = ""
	}
	want[burst.WinnerAssetID] = "picked"
	flagOf := func(r *myRating) string {
		switch {
		case r != nil && r.Picked && !r.Rejected:
			return "picked"
		case r != nil && r.Rejected && !r.Picked:
			return "rejected"
		case r == nil || (!r.Picked && !r.Rejected):
			return ""
		}
		return "both"
	}
	// apiHas waits until the API's ratings of the burst's photos are as
	// wanted.
	apiHas := func(what string, want map[string]string) {
		t.Helper()
		var got map[string]*myRating
		s.waitFor(what, func() bool {
			got = s.ratings(key, project)
			for id, f := range want {
				if flagOf(got[id]) != f {
					return false
				}
			}
			return true
		})
	}
	b := newBrowser(t, chrome)
	b.logErrors()
	// focusStrip gives the keyboard to the strip's photo with the focus,
	// again should the strip be drawn anew meanwhile.
	focusStrip := func() {
		t.Helper()
		b.waitJS("the group's photos to have the focus", `(() => {
			const li = document.querySelector('#group-members li[aria-selected="true"]');
			if (li && !li.contains(document.activeElement)) li.focus();
			return !!li && li === document.activeElement;
		})()`)
	}
	stripShows := func(what string, want map[string]string) {
		t.Helper()
		js, err := json.Marshal(want) // its keys sorted
		if err != nil {
			t.Fatal(err)
		}
		b.waitJS(what, `document.querySelector('#group')?.dataset.cluster === `+jsq(burst.ID)+` &&
			JSON.stringify(Object.fromEntries(Object.entries(`+stripFlags+`).sort())) === `+jsq(string(js)))
	}
	b.run("a laptop's screen", chromedp.EmulateViewport(1280, 800))
	b.signIn(s.url+"/#/projects/"+project+"/review", key)
	b.waitJS("the first burst drawn", `document.querySelector('#group')?.dataset.cluster === `+jsq(bursts.Items[0].ID))
	focusStrip()
	for i := 1; i <= at; i++ {
		b.key("the next burst", kb.ArrowDown)
		b.waitJS("the next burst", `document.querySelector('#group').dataset.cluster === `+jsq(bursts.Items[i].ID))
	}
	stripShows("the strip to show no flags", unflagged)

	// The setting, kept in the browser.
	b.run("turn on pick the winner, reject the rest", chromedp.Click(chromedp.CSS("#group-accept-flags input")))
	b.waitJS("the setting kept", `JSON.parse(localStorage.getItem('lightbox.cull') || '{}').acceptFlags === true`)

	focusStrip()
	b.key("accept the best shot", "a")
	b.waitJS("the next burst", `document.querySelector('#group').dataset.cluster === `+jsq(bursts.Items[at+1].ID))
	apiHas("the API to hold the best shot picked and the rest rejected", want)
	b.key("back to the first burst", kb.ArrowUp)
	stripShows("the strip to show the best shot picked and the rest rejected", want)
	b.shot("review-decides-01-accepted")

	b.key("undo", "z", chromedp.ModifierCtrl)
	stripShows("the strip to show every flag undone", unflagged)
	apiHas("the API to hold every flag undone", unflagged)

	// P and X on the photo with the focus; the focus stays (no moving on
	// after a flag unless asked).
	first := eval[string](b, `document.activeElement.dataset.asset`)
	b.key("pick the photo with the focus", "p")
	b.key("the next photo of the group", kb.ArrowRight)
	second := eval[string](b, `document.activeElement.dataset.asset`)
	if second == first {
		t.Fatal("the focus did not move to the group's next photo")
	}
	b.key("reject it", "x")
	b.key("give it three stars", "3")
	flagged := map[string]string{}
	for id := range unflagged {
		flagged[id] = ""
	}
	flagged[first], flagged[second] = "picked", "rejected"
	stripShows("the strip to show the pick and the reject", flagged)
	b.waitJS("the strip to show the stars", `document.querySelector('#group-members li[data-asset="`+second+`"] .stars').textContent === '★★★☆☆'`)
	apiHas("the API to hold the pick and the reject", flagged)
	s.waitFor("the API to hold the three stars", func() bool {
		r := s.ratings(key, project)[second]
		return r != nil && r.Rating != nil && *r.Rating == 3
	})
	b.shot("review-decides-02-keys")

	// The keys' help, opened in the review, lists the shared keys and the setting.
	b.key("the keys", "?")
	b.waitJS("the keys' help", `document.querySelector('#keys-help[open]') !== null`)
	help := b.text("#keys-help")
	for _, w := range []string{"Pick", "Reject", "3 stars", "Red label", "Undo", "Accept the best shot",
		"In group review, accepting the best shot picks it and rejects the rest"} {
		if !strings.Contains(help, w) {
			t.Errorf("the help does not say %q:\n%s", w, help)
		}
	}
	b.viewShot("review-decides-03-help")
}
