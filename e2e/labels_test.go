package e2e_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// labels reads the caller's colour label of each of the project's assets,
// "" for none.
func (s *stack) labels(key, project string) map[string]string {
	s.t.Helper()
	var page struct {
		Items []struct {
			ID       string
			MyRating *struct{ ColorLabel *string }
		}
	}
	s.apiGet(key, "/v1/projects/"+project+"/assets?limit=1000", &page)
	out := map[string]string{}
	for _, a := range page.Items {
		if a.MyRating != nil && a.MyRating.ColorLabel != nil {
			out[a.ID] = *a.MyRating.ColorLabel
		}
	}
	return out
}

// swatch is a JavaScript test that a tile shows a colour label's swatch
// in that colour, drawn and big enough to see; with no colour, that it
// shows none.
func swatch(tile, rgb string) string {
	if rgb == "" {
		return `(() => { const s = document.querySelector(` + jsq(tile+" .label-mark") + `);
			return !!s && getComputedStyle(s).display === 'none'; })()`
	}
	return `(() => { const s = document.querySelector(` + jsq(tile+" .label-mark") + `);
		if (!s) return false;
		const st = getComputedStyle(s), r = s.getBoundingClientRect();
		return st.display !== 'none' && st.visibility !== 'hidden' && r.width >= 10 && r.height >= 10 &&
			st.backgroundColor === ` + jsq(rgb) + `; })()`
}

// TestColorLabelsByKey labels photos as Lightroom does, by keys 6 to 9
// in the grid and the loupe and by the Label menu, and finds each label
// on its tile, in the API, under the grid's label filter and in a second
// tab; the same key again takes a label off, and undo puts one back.
func TestColorLabelsByKey(t *testing.T) {
	t.Parallel()
	const n = 12
	const red, green, blue, yellow = "rgb(229, 72, 77)", "rgb(47, 163, 107)", "rgb(59, 130, 246)", "rgb(241, 194, 27)"
	chrome := chromium(t)
	s, key := gridStack(t, "labels-stack.log")
	project := s.seeded(key, "Garden party", n)
	ids := s.listIDs(key, project)
	s.photoFiles(ids)
	tile := func(i int) string { return fmt.Sprintf(`#grid li[data-asset="%s"]`, ids[i]) }
	want := map[string]string{}
	inAPI := func(what string) {
		t.Helper()
		s.waitFor(what, func() bool {
			got := s.labels(key, project)
			for _, id := range ids {
				if got[id] != want[id] {
					return false
				}
			}
			return true
		})
	}

	b := newBrowser(t, chrome)
	b.logErrors()
	b.run("a laptop's screen", chromedp.EmulateViewport(1280, 800))
	b.signIn(s.url+"/#/projects/"+project+"/photos", key)
	b.waitJS("the grid", fmt.Sprintf(`document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (%d)'`, n))
	other := b.tab()
	other.run("open the project in a second tab", chromedp.Navigate(s.url+"/#/projects/"+project+"/photos"))
	other.waitJS("its grid", `document.querySelector(`+jsq(tile(0))+`) !== null`)

	// 6 on the first photo: red, on its tile at once and then in the API
	// and the other tab; 6 again takes it off.
	b.run("select the first photo", chromedp.Click(chromedp.CSS(tile(0))))
	b.key("red", "6")
	b.waitJS("a red swatch on the first tile", swatch(tile(0), red))
	want[ids[0]] = "red"
	inAPI("the red label through the API")
	other.waitJS("the red swatch in the second tab", swatch(tile(0), red))
	b.key("red again", "6")
	b.waitJS("no swatch on the first tile", swatch(tile(0), ""))
	delete(want, ids[0])
	inAPI("the label off through the API")
	other.waitJS("the swatch gone in the second tab", swatch(tile(0), ""))

	// 6 to 9 on the photos after it, and purple from the menu, which has
	// no key.
	b.key("red once more", "6")
	want[ids[0]] = "red"
	for i, c := range []struct{ key, label string }{{"7", "yellow"}, {"8", "green"}, {"9", "blue"}} {
		b.key("next photo", kb.ArrowRight)
		b.waitJS(fmt.Sprintf("photo %d selected", i+2), `document.querySelector('#selection-status').textContent === '1 selected' &&
			document.querySelector(`+jsq(tile(i+1))+`).getAttribute('aria-selected') === 'true'`)
		b.key(c.label, c.key)
		want[ids[i+1]] = c.label
	}
	b.key("next photo", kb.ArrowRight)
	b.waitJS("photo 5 selected", `document.querySelector(`+jsq(tile(4))+`).getAttribute('aria-selected') === 'true'`)
	b.setField("#set-label", "purple")
	want[ids[4]] = "purple"
	b.waitJS("each tile's swatch", swatch(tile(0), red)+" && "+swatch(tile(1), yellow)+" && "+swatch(tile(2), green)+" && "+
		swatch(tile(3), blue)+` && document.querySelector(`+jsq(tile(4))+`).dataset.label === 'purple'`)
	inAPI("five labels through the API")
	eval[bool](b, `(() => { document.querySelector(`+jsq(tile(0))+`).scrollIntoView({ block: 'center' }); return true; })()`)
	b.viewShot("labels-01-grid")

	// Undo takes the purple off again.
	b.key("undo", "z", chromedp.ModifierCtrl)
	delete(want, ids[4])
	b.waitJS("no swatch on photo 5", swatch(tile(4), ""))
	inAPI("purple undone through the API")

	// The grid's label filter shows what the API's does.
	for _, f := range []struct{ label, query string }{{"green", "colorLabel=green"}, {"none", "colorLabel=none"}} {
		b.setField("#filter-label", f.label)
		api := s.walkIDs(key, project, f.query)
		b.waitView("the "+f.label+" filter", api)
	}
	b.setField("#filter-label", "any")
	b.waitView("every photo again", ids)

	// In the loupe: the label beside the flags, and the keys there too.
	b.run("focus the first photo", chromedp.Focus(chromedp.CSS(tile(0))))
	b.key("open the loupe", kb.Enter)
	b.waitJS("the first photo drawn", drawn(ids[0]))
	b.waitJS("its red label", `document.querySelector('#loupe-label').textContent === 'Red' &&
		getComputedStyle(document.querySelector('#loupe-label'), '::before').backgroundColor === `+jsq(red))
	b.key("yellow", "7")
	b.waitJS("its yellow label", `document.querySelector('#loupe-label').textContent === 'Yellow'`)
	want[ids[0]] = "yellow"
	inAPI("the loupe's label through the API")
	b.viewShot("labels-02-loupe")

	// The keys' help lists them.
	b.key("the keys", "?")
	b.waitJS("the keys' help", `document.querySelector('#keys-help[open]') !== null`)
	help := b.text("#keys-help")
	for _, w := range []string{"Red label (again: none)", "Yellow label", "Green label", "Blue label", "Purple"} {
		if !strings.Contains(help, w) {
			t.Errorf("the help does not say %q:\n%s", w, help)
		}
	}
	b.viewShot("labels-03-keys")
}
