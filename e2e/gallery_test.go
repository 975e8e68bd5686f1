package e2e_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"lightbox/testsupport/testenv"
)

// TestClientGalleryInABrowser is what a photographer's client does with a
// gallery link: open it, get the password wrong then right, see the
// photos, favourite one and comment on another; the owner sees both.
func TestClientGalleryInABrowser(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key, project, assets := photographedWedding(t, "gallery", "wood.jpg", "dune.jpg", "storm.jpg")
	var g struct{ ID, ShareSlug string }
	if code := s.call("POST", "/v1/projects/"+project+"/galleries", key, map[string]any{
		"title": "Ana & Ben, proofs", "password": "harbour-2026", "assetIds": assets}, &g); code != 201 {
		t.Fatalf("create gallery: %d", code)
	}

	b := newBrowser(t, chrome)
	b.run("open the gallery", chromedp.Navigate(s.url+"/s/"+g.ShareSlug), chromedp.WaitVisible(chromedp.CSS("#password")))
	if got := b.text("#title"); got != "Ana & Ben, proofs" {
		t.Errorf("the page's title is %q", got)
	}
	b.shot("gallery-01-password")
	b.run("say who is choosing", chromedp.SendKeys(chromedp.CSS("#who-name"), "Ana"))
	b.run("enter a wrong password", chromedp.SendKeys(chromedp.CSS("#password"), "harbour-2025"+kb.Enter))
	b.waitJS("the page to say the password is wrong", `document.querySelector('#auth-error').textContent.includes('not right')`)
	eval[bool](b, `(document.querySelector('#password').value = '', true)`)
	b.run("enter the right password", chromedp.SendKeys(chromedp.CSS("#password"), "harbour-2026"+kb.Enter))
	b.waitJS("three photos shown", `[...document.querySelectorAll('#grid li.photo img')].filter(i => i.complete && i.naturalWidth > 0).length === 3`)
	b.shot("gallery-02-photos")

	first, second := `#grid li[data-asset="`+assets[0]+`"]`, `#grid li[data-asset="`+assets[1]+`"]`
	b.run("favourite the first photo", chromedp.Click(chromedp.CSS(first+" button.fav")))
	b.waitJS("the favourite to show", `document.querySelector(`+strconv.Quote(first+" button.fav")+`).getAttribute('aria-pressed') === 'true' && `+
		`document.querySelector(`+strconv.Quote(first+" .fav-count")+`).textContent === '1'`)
	b.run("comment on the second photo",
		chromedp.Click(chromedp.CSS(second+" button.comment-open")),
		chromedp.SendKeys(chromedp.CSS(second+" textarea.comment-text"), "This one in black and white, please."),
		chromedp.Click(chromedp.CSS(second+" button.comment-send")))
	b.waitJS("the comment to count", `document.querySelector(`+strconv.Quote(second+" .comments-count")+`).textContent === '1'`)
	b.shot("gallery-03-favourite-and-comment")

	// The counts, through the API as the owner's app reads them.
	var auth struct{ Token string }
	if code := s.call("POST", "/v1/share/"+g.ShareSlug+"/auth", "", map[string]any{"password": "harbour-2026"}, &auth); code != 200 {
		t.Fatalf("auth: %d", code)
	}
	var share struct {
		Assets []struct {
			AssetID                      string
			FavoriteCount, CommentsCount int
		}
	}
	if code := s.call("GET", "/v1/share/"+g.ShareSlug, auth.Token, nil, &share); code != 200 || len(share.Assets) != 3 {
		t.Fatalf("share: %d %+v", code, share)
	}
	if a := share.Assets[0]; a.AssetID != assets[0] || a.FavoriteCount != 1 || a.CommentsCount != 0 {
		t.Errorf("first photo %+v", a)
	}
	if a := share.Assets[1]; a.AssetID != assets[1] || a.FavoriteCount != 0 || a.CommentsCount != 1 {
		t.Errorf("second photo %+v", a)
	}
	var comments struct {
		Items []struct{ AssetID, Text string }
	}
	s.call("GET", "/v1/galleries/"+g.ID+"/comments", key, nil, &comments)
	if len(comments.Items) != 1 || comments.Items[0].Text != "This one in black and white, please." || comments.Items[0].AssetID != assets[1] {
		t.Errorf("the owner reads %+v", comments.Items)
	}

	// A reload keeps the viewer in (the token is in the browser's storage)
	// and shows their favourite.
	b.run("reload", chromedp.Reload())
	b.waitJS("the favourite after a reload", `document.querySelector(`+strconv.Quote(first+" button.fav")+`)?.getAttribute('aria-pressed') === 'true'`)
}

// photographedWedding starts a stack logging to artifacts/NAME-stack.log,
// with a photographer, a project of theirs and the photos named (the
// corpus's, or files at absolute paths), uploaded and processed; it
// returns their asset ids in order.
func photographedWedding(t *testing.T, name string, photos ...string) (s *stack, key, project string, assets []string) {
	t.Helper()
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(artifacts, name+"-stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	s = startStack(t, logFile, nil)
	key = s.user("ana@example.org", false)
	var p struct{ ID string }
	if code := s.call("POST", "/v1/projects", key, map[string]any{"title": "Harbour wedding"}, &p); code != 201 {
		t.Fatalf("create project: %d", code)
	}
	dir := filepath.Join(testenv.Corpus(t), "photos")
	for _, photo := range photos {
		if !filepath.IsAbs(photo) {
			photo = filepath.Join(dir, photo)
		}
		id, _ := s.upload(key, p.ID, photo)
		assets = append(assets, id)
	}
	s.waitReady(key, p.ID, len(assets))
	return s, key, p.ID, assets
}
