package e2e_test

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestPickClientFavorites: a named client favourites two photos of a
// gallery, one before the owner opens the grid and one after; the grid's
// "Client favourites" filter shows exactly those, its count following the
// second at once; "Pick these" picks both in one step, as the API says,
// and one undo takes both picks back. The Deliver tab's gallery says who
// chose what, and follows a third choice at once.
func TestPickClientFavorites(t *testing.T) {
	t.Parallel()
	const n = 8
	chrome := chromium(t)
	s, key := gridStack(t, "favorites-stack.log")
	project := s.seeded(key, "Wedding", n)
	ids := s.listIDs(key, project)
	s.photoFiles(ids)
	var g struct{ ID, ShareSlug string }
	if code := s.call("POST", "/v1/projects/"+project+"/galleries", key, map[string]any{"title": "Ceremony", "assetIds": ids[:5]}, &g); code != 201 {
		t.Fatalf("create gallery: %d", code)
	}
	var visitor struct{ Token string }
	if code := s.call("POST", "/v1/share/"+g.ShareSlug+"/auth", "", map[string]any{"name": "Kim Lee"}, &visitor); code != 200 {
		t.Fatalf("name the visitor: %d", code)
	}
	heart := func(id string) {
		t.Helper()
		if code := s.call("POST", "/v1/share/"+g.ShareSlug+"/favorite", visitor.Token, map[string]any{"assetId": id, "favorite": true}, nil); code != 200 {
			t.Fatalf("favourite %s: %d", id, code)
		}
	}
	picked := func(want map[string]bool) func() bool {
		return func() bool {
			got := s.ratings(key, project)
			for _, id := range ids {
				if (got[id] != nil && got[id].Picked) != want[id] {
					return false
				}
			}
			return true
		}
	}
	heart(ids[1])

	b := newBrowser(t, chrome)
	b.logErrors()
	b.run("a laptop's screen", chromedp.EmulateViewport(1280, 800))
	b.signIn(s.url+"/#/projects/"+project+"/photos", key)
	b.waitJS("the grid", fmt.Sprintf(`document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (%d)'`, n))
	option := `document.querySelector('#filter-client option[value="` + g.ID + `"]')?.textContent`
	b.waitJS("the gallery among the favourites' filters", option+` === 'Ceremony (1 favourite)'`)
	b.setField("#filter-client", g.ID)
	b.waitView("the client's one favourite", []string{ids[1]})

	heart(ids[3])
	b.waitView("the second favourite, live", []string{ids[1], ids[3]})
	b.waitJS("the gallery's count, live", option+` === 'Ceremony (2 favourites)'`)
	b.waitJS("the action for both", `document.querySelector('#pick-favorites').textContent === 'Pick these 2'`)
	b.viewShot("favorites-01-filter")

	b.run("pick them", chromedp.Click(chromedp.CSS("#pick-favorites")))
	s.waitFor("both picked through the API", picked(map[string]bool{ids[1]: true, ids[3]: true}))
	b.run("undo", chromedp.Click(chromedp.CSS("#undo")))
	s.waitFor("both picks undone through the API", picked(map[string]bool{}))
	if eval[bool](b, `import('/static/cull.js').then((c) => c.canUndo())`) {
		t.Error("one undo left another step to undo")
	}

	card := `document.querySelector('#galleries li[data-gallery="` + g.ID + `"]')`
	b.run("the Deliver tab", chromedp.Navigate(s.url+"/#/projects/"+project+"/deliver"))
	b.waitJS("who chose what", card+`?.querySelector('.choices')?.textContent.startsWith('Kim Lee chose 2: ')`)
	heart(ids[4])
	b.waitJS("the third choice, live", card+`.querySelector('.choices').textContent.startsWith('Kim Lee chose 3: ') &&
		`+card+`.querySelector('.fav-count').textContent === '♥ 3'`)
	eval[bool](b, `(() => { `+card+`.scrollIntoView({ block: 'center' }); return true; })()`)
	b.viewShot("favorites-02-deliver")

	// The favourites go on to the editor: "Copy file names" gives what
	// Lightroom's Library filter takes, the names without extensions.
	var want []string
	for _, id := range []string{ids[1], ids[3], ids[4]} {
		var a struct{ Filename string }
		if code := s.call("GET", "/v1/assets/"+id, key, nil, &a); code != 200 {
			t.Fatalf("asset %s: %d", id, code)
		}
		want = append(want, strings.TrimSuffix(a.Filename, path.Ext(a.Filename)))
	}
	b.allowClipboard(s.url)
	b.run("copy Kim's file names", chromedp.Click(chromedp.CSS(`#galleries li[data-gallery="`+g.ID+`"] [data-act=copy-names]`)))
	b.waitJS("the copy announced", `document.getElementById('status').textContent.startsWith('Kim Lee’s file names are copied')`)
	got := strings.Split(eval[string](b, `navigator.clipboard.readText()`), ", ")
	if !reflect.DeepEqual(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("the clipboard holds %q, want the names %q", got, want)
	}
}
