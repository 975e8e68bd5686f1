package e2e_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDeliverFollowsTheEvents opens the Deliver page and, while it is
// live, changes what it shows elsewhere: picks and a gallery through the
// API, a client's favourite and comment through the gallery's public
// routes, an export the page started finishing in the worker. Each count
// and status line on the page follows without a reload.
func TestDeliverFollowsTheEvents(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key := gridStack(t, "deliver-live-stack.log")
	project := s.renderable(key, "Live delivery", 6)
	ids := s.listIDs(key, project)
	b := newBrowser(t, chrome)
	b.logErrors()
	b.signIn(s.url+"/#/projects/"+project+"/deliver", key)
	b.waitJS("the page drawn with no picks and no galleries", `document.querySelector('label[for="export-source-picks"]')?.textContent === 'The picks (0)' &&
		!!document.querySelector('#no-galleries')`)
	b.waitJS("the page live", `document.querySelector('#live')?.dataset.state === 'live'`)
	eval[bool](b, `window.notReloaded = true`)

	var actions []map[string]any
	for _, id := range ids[:3] {
		actions = append(actions, map[string]any{"assetId": id, "picked": true})
	}
	if code := s.call("POST", "/v1/projects/"+project+"/cull:applyAction", key, map[string]any{"actions": actions}, nil); code != 200 {
		t.Fatalf("pick: %d", code)
	}
	b.waitJS("the picks counted", `document.querySelector('label[for="export-source-picks"]')?.textContent === 'The picks (3)'`)

	var g struct{ ID, ShareSlug string }
	if code := s.call("POST", "/v1/projects/"+project+"/galleries", key, map[string]any{"title": "Made elsewhere", "assetIds": ids[:2]}, &g); code != 201 {
		t.Fatalf("make a gallery: %d", code)
	}
	row := `document.querySelector('#galleries li.gallery[data-gallery="` + g.ID + `"]')`
	b.waitJS("the gallery listed", row+`?.querySelector('h3').textContent === 'Made elsewhere' &&
		`+row+`.querySelector('p.muted').textContent.startsWith('2 photos') && !document.querySelector('#no-galleries')`)
	if code := s.call("POST", "/v1/galleries/"+g.ID+"/assets", key, map[string]any{"assetIds": ids[2:4]}, nil); code != 200 {
		t.Fatalf("add photos: %d", code)
	}
	b.waitJS("its photos counted", row+`?.querySelector('p.muted').textContent.startsWith('4 photos')`)

	var viewer struct{ Token string }
	if code := s.call("POST", "/v1/share/"+g.ShareSlug+"/auth", "", map[string]any{"name": "Kim"}, &viewer); code != 200 {
		t.Fatalf("a client opens the gallery: %d", code)
	}
	if code := s.call("POST", "/v1/share/"+g.ShareSlug+"/favorite", viewer.Token, map[string]any{"assetId": ids[0], "favorite": true}, nil); code != 200 {
		t.Fatalf("the client's favourite: %d", code)
	}
	if code := s.call("POST", "/v1/share/"+g.ShareSlug+"/comment", viewer.Token, map[string]any{"assetId": ids[1], "text": "This one, please."}, nil); code != 201 {
		t.Fatalf("the client's comment: %d", code)
	}
	b.waitJS("the favourite and the comment counted", row+`?.querySelector('.fav-count').textContent === '♥ 1' &&
		`+row+`.querySelector('.comment-count').textContent === '1 comment' && `+row+`.querySelector('.choices').textContent.includes('Kim chose 1')`)
	if code := s.call("PATCH", "/v1/galleries/"+g.ID, key, map[string]any{"title": "Made elsewhere, proofs"}, nil); code != 200 {
		t.Fatalf("retitle: %d", code)
	}
	b.waitJS("the new title", row+`?.querySelector('h3').textContent === 'Made elsewhere, proofs'`)
	b.shot("deliver-live-gallery")

	// An export of the picks, started here, finishes in the worker.
	b.setField("#export-preset", "full_res")
	b.run("export the picks", chromedp.Click(chromedp.CSS("#export-start")))
	b.waitJS("the export ready", `(() => { const e = document.querySelector('#exports li.export');
		return e?.dataset.status === 'done' && e.querySelector('.export-status').textContent.startsWith('Ready'); })()`)

	if code := s.call("DELETE", "/v1/galleries/"+g.ID, key, nil, nil); code != 204 {
		t.Fatalf("delete the gallery: %d", code)
	}
	b.waitJS("the gallery gone", `!`+row+` && !!document.querySelector('#no-galleries')`)
	if !eval[bool](b, `window.notReloaded === true`) {
		t.Error("the page was reloaded on the way")
	}
}
