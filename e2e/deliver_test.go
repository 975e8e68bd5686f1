package e2e_test

import (
	"archive/zip"
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestDeliverThePicks exports a shoot's picks from the Deliver page and
// opens the zip (its entries are the picks), makes a client gallery of
// them with a password and opens its page (it shows exactly the picks),
// then reads what the client left, changes the gallery and deletes it.
func TestDeliverThePicks(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key := gridStack(t, "deliver-stack.log")
	project := s.renderable(key, "Harbour wedding", 12)
	picks := s.readyRun(key, project, 4)
	names := map[string]string{}
	var page struct {
		Items []struct{ ID, Filename string }
	}
	s.apiGet(key, "/v1/projects/"+project+"/assets?limit=1000", &page)
	for _, a := range page.Items {
		names[a.ID] = a.Filename
	}
	var actions []map[string]any
	for _, id := range picks {
		actions = append(actions, map[string]any{"assetId": id, "picked": true})
	}
	if code := s.call("POST", "/v1/projects/"+project+"/cull:applyAction", key, map[string]any{"actions": actions}, nil); code != 200 {
		t.Fatalf("pick: %d", code)
	}

	b := newBrowser(t, chrome)
	b.logErrors()
	b.signIn(s.url+"/#/projects/"+project+"/deliver", key)
	b.waitJS("the picks counted", `document.querySelector('label[for="export-source-picks"]')?.textContent === 'The picks (4)'`)
	b.shot("deliver-01-page")

	// Export the picks at full resolution.
	if !eval[bool](b, `document.querySelector('#export-source-picks').checked`) {
		t.Error("the export does not start from the picks")
	}
	b.setField("#export-preset", "full_res")
	b.run("export", chromedp.Click(chromedp.CSS("#export-start")))
	b.waitJS("the export ready with its download link", `(() => { const a = document.querySelector('.export[data-status="done"] a.export-download');
		return !!a && !a.hidden && a.href.startsWith('http'); })()`)
	b.shot("deliver-02-exported")
	link := eval[string](b, `document.querySelector('.export[data-status="done"] a.export-download').href`)
	res, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("the download link answers %d", res.StatusCode)
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("the download is no zip: %v", err)
	}
	var entries, want []string
	for _, f := range zr.File {
		entries = append(entries, f.Name)
	}
	for _, id := range picks {
		want = append(want, names[id])
	}
	slices.Sort(entries)
	slices.Sort(want)
	if !slices.Equal(entries, want) {
		t.Errorf("the zip holds %v, want the picks %v", entries, want)
	}

	// A gallery of the picks, with a password.
	b.run("title the gallery", chromedp.SendKeys(chromedp.CSS("#gallery-title"), "Ana & Ben, the picks"))
	b.run("give it a password", chromedp.SendKeys(chromedp.CSS("#gallery-password"), "harbour-2026"))
	b.run("make it", chromedp.Click(chromedp.CSS("#gallery-create")))
	b.waitJS("the gallery's link", `!!document.querySelector('#gallery-made-link')`)
	share := eval[string](b, `document.querySelector('#gallery-made-link').href`)
	if !strings.Contains(share, "/s/") {
		t.Fatalf("the gallery's link is %q", share)
	}
	b.waitJS("the gallery listed with no favourites or comments yet", `(() => { const g = document.querySelector('#galleries li.gallery');
		return !!g && g.querySelector('h3').textContent === 'Ana & Ben, the picks' && g.querySelector('.fav-count').textContent === '♥ 0' &&
			g.querySelector('.comment-count').textContent === '0 comments'; })()`)
	b.shot("deliver-03-gallery")

	// The client's page shows exactly the picks, behind the password.
	client := b.tab()
	client.run("open the gallery", chromedp.Navigate(share), chromedp.WaitVisible(chromedp.CSS("#password")))
	client.run("say who is choosing", chromedp.SendKeys(chromedp.CSS("#who-name"), "Ana"))
	client.run("enter the password", chromedp.SendKeys(chromedp.CSS("#password"), "harbour-2026"+kb.Enter))
	client.waitJS("the photos shown", `[...document.querySelectorAll('#grid li.photo img')].filter((i) => i.complete && i.naturalWidth > 0).length === 4`)
	shown := eval[[]string](client, `[...document.querySelectorAll('#grid li.photo')].map((li) => li.dataset.asset)`)
	if !slices.Equal(shown, picks) {
		t.Errorf("the gallery shows %v, want the picks %v in their order", shown, picks)
	}
	client.shot("deliver-04-client")
	// The client favourites one and comments on another.
	client.run("favourite the first", chromedp.Click(chromedp.CSS(`#grid li[data-asset="`+picks[0]+`"] .fav`)))
	client.waitJS("the favourite counted", `document.querySelector('#grid li[data-asset="`+picks[0]+`"] .fav-count').textContent === '1'`)
	client.run("comment on the second", chromedp.Click(chromedp.CSS(`#grid li[data-asset="`+picks[1]+`"] .comment-open`)),
		chromedp.SendKeys(chromedp.CSS(`#grid li[data-asset="`+picks[1]+`"] textarea`), "This one in the album, please."),
		chromedp.Click(chromedp.CSS(`#grid li[data-asset="`+picks[1]+`"] .comment-send`)))
	client.waitJS("the comment sent", `document.querySelector('#grid li[data-asset="`+picks[1]+`"] .mine li')?.textContent === 'This one in the album, please.'`)

	// The owner sees both, reads the comment, changes the gallery and deletes it.
	b.run("reload the Deliver page", chromedp.Reload())
	b.waitJS("the counts", `(() => { const g = document.querySelector('#galleries li.gallery');
		return !!g && g.querySelector('.fav-count').textContent === '♥ 1' && g.querySelector('.comment-count').textContent === '1 comment'; })()`)
	b.run("read the comments", chromedp.Click(chromedp.CSS(`#galleries li.gallery [data-act="comments"]`)))
	b.waitJS("the comment with its photo's name", `(() => { const li = document.querySelector('#galleries .comment-list li');
		return !!li && li.textContent.includes('This one in the album, please.') && li.textContent.includes(`+jsq(names[picks[1]])+`); })()`)
	b.shot("deliver-05-comments")
	b.run("change it", chromedp.Click(chromedp.CSS(`#galleries li.gallery [data-act="change"]`)))
	b.waitJS("the change form", `!!document.querySelector('#galleries .gallery-change')`)
	b.setField(`#galleries .gallery-change input[id$="-title"]`, "")
	b.run("retitle it", chromedp.SendKeys(chromedp.CSS(`#galleries .gallery-change input[id$="-title"]`), "Ana & Ben, proofs"),
		chromedp.Click(chromedp.CSS(`#galleries .gallery-change input[id$="-downloads"]`)),
		chromedp.Click(chromedp.CSS(`#galleries .gallery-change input[id$="-file-names"]`)),
		chromedp.SendKeys(chromedp.CSS(`#galleries .gallery-change input[id$="-selection-limit"]`), "3"),
		chromedp.Click(chromedp.CSS(`#galleries .gallery-change input[id$="-watermark"]`)))
	b.setField(`#galleries .gallery-change select[id$="-watermark-position"]`, "center")
	b.setField(`#galleries .gallery-change input[id$="-watermark-opacity"]`, "50")
	b.run("save the change", chromedp.Click(chromedp.CSS(`#galleries .gallery-change button[type="submit"]`)))
	b.waitJS("the new title and settings listed", `(() => { const g = document.querySelector('#galleries li.gallery');
		return g?.querySelector('h3')?.textContent === 'Ana & Ben, proofs' && g.textContent.includes('downloads allowed') &&
			g.textContent.includes('file names shown') && g.textContent.includes('choose up to 3'); })()`)
	var g struct {
		Title             string
		AllowDownloads    bool
		ShowFileNames     bool
		SelectionLimit    *int
		Watermark         bool
		WatermarkPosition string
		WatermarkOpacity  float64
		ShareSlug         string
	}
	gid := eval[string](b, `document.querySelector('#galleries li.gallery').dataset.gallery`)
	s.apiGet(key, "/v1/galleries/"+gid, &g)
	if g.Title != "Ana & Ben, proofs" || !g.AllowDownloads || !g.ShowFileNames || g.SelectionLimit == nil || *g.SelectionLimit != 3 ||
		!g.Watermark || g.WatermarkPosition != "center" || g.WatermarkOpacity != 0.5 {
		t.Errorf("after the change the API has %+v", g)
	}
	b.run("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateTouch))
	if wide := eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`); wide {
		t.Error("the Deliver page is wider than a phone's screen")
	}
	b.viewShot("deliver-06-phone")
	b.run("back to a laptop's screen", chromedp.EmulateViewport(1280, 800))
	b.run("delete it", chromedp.Click(chromedp.CSS(`#galleries li.gallery [data-act="delete"]`)),
		chromedp.Click(chromedp.CSS(`#galleries li.gallery [data-act="delete-yes"]`)))
	b.waitJS("the gallery gone from the list", `!document.querySelector('#galleries li.gallery')`)
	if code := s.call("GET", "/v1/share/"+g.ShareSlug, "", nil, nil); code != 404 {
		t.Errorf("the deleted gallery's link answers %d, want 404", code)
	}
}
