package e2e_test

import (
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestTwoClientsChooseInABrowser is two people choosing from one gallery
// link with a limit of three: each names themself, chooses, sees what is
// left, is told plainly when a fourth is too many, and finds their own
// hearts after closing the tab and opening the link again; the
// photographer reads each one's list by name.
func TestTwoClientsChooseInABrowser(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key, project, assets := photographedWedding(t, "visitors", "wood.jpg", "dune.jpg", "storm.jpg", "blinds.jpg", "kite-2560x1600.jpg")
	var g struct{ ID, ShareSlug string }
	if code := s.call("POST", "/v1/projects/"+project+"/galleries", key, map[string]any{
		"title": "Choose three", "password": "harbour-2026", "assetIds": assets, "selectionLimit": 3}, &g); code != 201 {
		t.Fatalf("create gallery: %d", code)
	}
	link := s.url + "/s/" + g.ShareSlug
	heart := func(b *browser, i int) {
		b.t.Helper()
		b.run("choose photo "+assets[i], chromedp.Click(chromedp.CSS(`#grid li[data-asset="`+assets[i]+`"] button.fav`)))
	}
	hearts := func(b *browser) []string {
		return eval[[]string](b, `[...document.querySelectorAll('#grid li.photo')].filter((li) => li.querySelector('button.fav').getAttribute('aria-pressed') === 'true').map((li) => li.dataset.asset)`)
	}
	open := func(b *browser, name, email string) {
		b.t.Helper()
		b.run("open the gallery", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#who-name")))
		b.run("say who is choosing", chromedp.SendKeys(chromedp.CSS("#who-name"), name), chromedp.SendKeys(chromedp.CSS("#who-email"), email))
		b.run("enter the password", chromedp.SendKeys(chromedp.CSS("#password"), "harbour-2026"+kb.Enter))
		b.waitJS("the photos and what may be chosen", `document.querySelectorAll('#grid li.photo').length === 5 && document.querySelector('#selection')?.textContent.includes('3 left')`)
	}

	kim := newBrowser(t, chrome)
	open(kim, "Kim Lee", "kim@example.org")
	for i := range 3 {
		heart(kim, i)
	}
	kim.waitJS("none left", `document.querySelector('#selection').textContent.includes('0 left') && document.querySelectorAll('#grid button.fav[aria-pressed="true"]').length === 3`)
	heart(kim, 3)
	kim.waitJS("the fourth refused with a message", `document.querySelector('#status').textContent.includes('as many as this gallery takes')`)
	kim.shot("visitors-01-limit")
	if got := hearts(kim); !slices.Equal(got, assets[:3]) {
		t.Errorf("kim's hearts %v after a fourth, want the first three", got)
	}

	bo := newBrowser(t, chrome)
	open(bo, "Bo", "")
	heart(bo, 2)
	heart(bo, 4)
	bo.waitJS("two chosen", `document.querySelector('#selection').textContent.includes('1 left')`)

	// Kim closes the tab and opens the link again, in the same browser.
	again := kim.tab()
	kim.run("close the tab", chromedp.Navigate("about:blank"))
	again.run("open the link again", chromedp.Navigate(link))
	again.waitJS("kim's hearts back", `document.querySelectorAll('#grid button.fav[aria-pressed="true"]').length === 3 && document.querySelector('#visitor')?.textContent.includes('Kim Lee')`)
	if got := hearts(again); !slices.Equal(got, assets[:3]) {
		t.Errorf("kim's hearts %v after opening the link again, want the first three", got)
	}
	again.shot("visitors-02-back")

	var choices struct {
		Visitors []struct {
			Name      *string
			AssetIDs  []string
			FileNames []string
		}
	}
	if code := s.call("GET", "/v1/galleries/"+g.ID+"/favorites", key, nil, &choices); code != 200 || len(choices.Visitors) != 2 {
		t.Fatalf("favorites: %d %+v", code, choices)
	}
	if v := choices.Visitors[0]; v.Name == nil || *v.Name != "Bo" || !slices.Equal(v.AssetIDs, []string{assets[2], assets[4]}) {
		t.Errorf("bo's list %+v", v)
	}
	if v := choices.Visitors[1]; v.Name == nil || *v.Name != "Kim Lee" || !slices.Equal(v.FileNames, []string{"wood.jpg", "dune.jpg", "storm.jpg"}) {
		t.Errorf("kim's list %+v", v)
	}
}
