package e2e_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"lightbox/testsupport/testenv"
)

// pairRow is what ingest recorded of one half of a pair.
type pairRow struct {
	ID          string     `db:"id"`
	Filename    string     `db:"filename"`
	ContentType string     `db:"content_type"`
	Status      string     `db:"status"`
	CapturedAt  *time.Time `db:"captured_at"`
	Pair        *string    `db:"pair_asset_id"`
}

func (r pairRow) String() string {
	pair := "none"
	if r.Pair != nil {
		pair = *r.Pair
	}
	return fmt.Sprintf("%s (%s): %s, %s, captured %v, paired with %s", r.Filename, r.ID, r.ContentType, r.Status, r.CapturedAt, pair)
}

// TestPairsCullAsOne uploads a raw, the JPEG the camera wrote with it and
// another photo through the page, as a photographer would. The grid shows
// two photos, the pair as its raw's tile marked RAW+JPEG; four stars by
// key on that tile reach the JPEG too, in the API and on the page; after
// a reload the mark and the stars are still there.
func TestPairsCullAsOne(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key := gridStack(t, "pairs-stack.log")
	raw, jpeg := testenv.RawPlusJPEG(t, t.TempDir())
	other := distinctPhotos(t, 1)[0]

	b := newBrowser(t, chrome)
	b.logErrors()
	b.run("a laptop's screen", chromedp.EmulateViewport(1280, 800))
	project := b.newProject(s.url, key, "Studio, RAW+JPEG")
	b.run("choose the raw, its JPEG and another photo",
		chromedp.SetUploadFiles(chromedp.CSS("#file-input"), []string{raw, jpeg, other}))
	b.run("open the photos", chromedp.Click(chromedp.CSS("#tab-photos")))

	// The pair forms in the ingest of whichever half comes second.
	halves := map[string]pairRow{}
	s.waitFor("both halves processed", func() bool {
		var rows []pairRow
		if err := s.env.DB.Select(&rows, `SELECT id, filename, content_type, status, captured_at, pair_asset_id::text AS pair_asset_id
			FROM assets WHERE project_id = $1 AND filename IN ('IMG_0042.CRW', 'IMG_0042.JPG')`, project); err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, r := range rows {
			halves[r.Filename] = r
			if r.Status == "failed" {
				t.Fatalf("a half failed: %s", r)
			}
			if r.Status == "cull" || r.Status == "search" || r.Status == "ai" {
				done++
			}
		}
		return done == 2
	})
	rawRow, jpegRow := halves["IMG_0042.CRW"], halves["IMG_0042.JPG"]
	if rawRow.Pair == nil || *rawRow.Pair != jpegRow.ID || jpegRow.Pair == nil || *jpegRow.Pair != rawRow.ID {
		t.Fatalf("ingest did not pair the raw and the JPEG:\n%s\n%s", rawRow, jpegRow)
	}

	// Two tiles: the pair's (the raw's, marked) and the other photo's.
	rawTile := `#grid li[data-asset="` + rawRow.ID + `"]:not([hidden])`
	b.waitJS("two tiles, the raw's marked RAW+JPEG", `(() => {
		const tiles = [...document.querySelectorAll('#grid li[data-asset]:not([hidden])')];
		const marked = tiles.filter((li) => li.dataset.pair === 'raw+jpeg');
		return tiles.length === 2 && marked.length === 1 && marked[0].dataset.asset === `+jsq(rawRow.ID)+` &&
			marked[0].querySelector('.pair-mark').textContent === 'RAW+JPEG' &&
			!tiles.some((li) => li.dataset.asset === `+jsq(jpegRow.ID)+`);
	})()`)
	b.waitJS("the grid to count two photos", `document.querySelector('#view-status').textContent === '2 photos'`)

	// Four stars by key on the pair's tile: on the tile at once, then on
	// the JPEG in the API and in the page's own state.
	b.run("select the pair", chromedp.Click(chromedp.CSS(rawTile)))
	b.key("four stars", "4")
	b.waitJS("four stars on the pair's tile", `document.querySelector(`+jsq(rawTile)+`).dataset.rating === '4'`)
	s.waitFor("four stars on the JPEG in the API", func() bool {
		var a struct{ MyRating *myRating }
		s.apiGet(key, "/v1/assets/"+jpegRow.ID, &a)
		return a.MyRating != nil && a.MyRating.Rating != nil && *a.MyRating.Rating == 4
	})
	b.waitJS("four stars on the JPEG in the page", `import('/static/cull.js').then((c) => c.marksOf(`+jsq(jpegRow.ID)+`).rating === 4)`)
	if got := s.ratings(key, project)[rawRow.ID]; got == nil || got.Rating == nil || *got.Rating != 4 {
		t.Errorf("the raw is rated %v in the API, want 4 stars", got)
	}
	checkMark(t, b, rawTile, "a laptop's screen")
	b.waitJS("the thumbnails", thumbsLoaded(2))
	b.viewShot("pairs-01-grid")

	// The loupe walks the two photos, the pair once.
	b.key("open the loupe", kb.Enter)
	b.waitJS("the pair in the loupe", `document.querySelector('#loupe[open] #loupe-pair')?.textContent === 'RAW+JPEG' &&
		/ of 2$/.test(document.querySelector('#loupe-pos').textContent)`)
	b.viewShot("pairs-02-loupe")
	b.key("close the loupe", kb.Escape)
	b.waitJS("the loupe closed", `!document.querySelector('#loupe[open]')`)

	b.run("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateTouch))
	b.waitJS("the grid at a phone's width", `document.querySelector(`+jsq(rawTile)+`)?.getBoundingClientRect().width < 200 && `+thumbsLoaded(2))
	checkMark(t, b, rawTile, "a phone's screen")
	b.viewShot("pairs-03-phone")
	b.run("back to a laptop's screen", chromedp.EmulateViewport(1280, 800))

	// A reload reads the pair from the list; meanwhile the assistant has
	// found the raw soft, and not the JPEG.
	s.setSignals(blurredPhoto, rawRow.ID)
	b.run("reload", chromedp.Reload())
	b.waitJS("the pair's tile, marked, with four stars, after a reload", `(() => {
		const tiles = [...document.querySelectorAll('#grid li[data-asset]:not([hidden])')];
		const li = document.querySelector(`+jsq(rawTile)+`);
		return tiles.length === 2 && !!li && li.dataset.pair === 'raw+jpeg' && li.dataset.rating === '4' &&
			li.querySelector('.stars').textContent === '★★★★☆' && li.querySelector('.pair-mark').textContent === 'RAW+JPEG';
	})()`)
	b.waitJS("the JPEG's four stars after a reload", `import('/static/cull.js').then((c) => c.marksOf(`+jsq(jpegRow.ID)+`).rating === 4)`)
	checkMark(t, b, rawTile, "a laptop's screen, after a reload")
	b.waitJS("the thumbnails after a reload", thumbsLoaded(2))
	b.viewShot("pairs-04-reloaded")

	// Where the filters leave the raw out, the JPEG shows alone, with the
	// pair's stars; the pair still counts once.
	jpegTile := `#grid li[data-asset="` + jpegRow.ID + `"]:not([hidden])`
	b.setField("#filter-warning", "none")
	b.waitJS("the JPEG alone, with four stars, where the raw is left out", `(() => {
		const li = document.querySelector(`+jsq(jpegTile)+`);
		return !document.querySelector(`+jsq(rawTile)+`) && !!li && li.dataset.rating === '4' && li.dataset.pair === '' &&
			li.querySelector('.stars').textContent === '★★★★☆';
	})()`)
	if got := b.text(`#filter-warning option[value="any"]`); got != "Any quality (2)" {
		t.Errorf("the warning filter's first option reads %q, want the pair counted once: Any quality (2)", got)
	}
	b.waitJS("the JPEG's thumbnail", thumbsLoaded(eval[int](b, `document.querySelectorAll('#grid li[data-asset]:not([hidden])').length`)))
	b.viewShot("pairs-05-jpeg-alone")
	b.setField("#filter-warning", "any")
	b.waitJS("the pair's tile again", `!!document.querySelector(`+jsq(rawTile)+`) && !document.querySelector(`+jsq(jpegTile)+`)`)

	// Delivering the whole shoot with the raws alone: the JPEG half stays
	// out, the photo shot alone goes in.
	b.run("open Deliver", chromedp.Click(chromedp.CSS("#tab-deliver")))
	b.run("export every photo", chromedp.Click(chromedp.CSS("#export-source-all")))
	b.setField("#export-preset", "full_res")
	b.setField("#export-pairs", "raw")
	b.run("export", chromedp.Click(chromedp.CSS("#export-start")))
	b.waitJS("the export ready with its download link", `(() => { const a = document.querySelector('.export[data-status="done"] a.export-download');
		return !!a && !a.hidden && a.href.startsWith('http'); })()`)
	_, names := downloadExport(t, b)
	slices.Sort(names)
	if want := []string{"01-blinds.jpg", "IMG_0042.CRW"}; !slices.Equal(names, want) {
		t.Errorf("the export of the raws holds %v, want %v", names, want)
	}
}

// thumbsLoaded is a JavaScript test that n tiles of the grid show their
// thumbnails, loaded and drawn.
func thumbsLoaded(n int) string {
	return fmt.Sprintf(`[...document.querySelectorAll('#grid li:not([hidden]) img[data-loaded]')].filter((i) => i.complete && i.naturalWidth > 0).length === %d`, n)
}

// checkMark checks that a tile's RAW+JPEG mark is drawn inside the tile,
// whole, in type large enough to read.
func checkMark(t *testing.T, b *browser, tile, when string) {
	t.Helper()
	got := eval[string](b, `(() => {
		const li = document.querySelector(`+jsq(tile)+`), m = li && li.querySelector('.pair-mark');
		if (!m) return 'no mark';
		const r = m.getBoundingClientRect(), t = li.getBoundingClientRect(), st = getComputedStyle(m);
		if (st.display === 'none' || st.visibility === 'hidden' || r.width === 0) return 'not drawn';
		if (r.left < t.left || r.right > t.right || r.top < t.top || r.bottom > t.bottom) return 'outside its tile';
		if (m.scrollWidth > m.clientWidth + 1) return 'cut off';
		if (parseFloat(st.fontSize) < 11) return 'in ' + st.fontSize + ' type';
		return '';
	})()`)
	if got != "" {
		t.Errorf("on %s, the RAW+JPEG mark is %s", when, strings.TrimSpace(got))
	}
}
