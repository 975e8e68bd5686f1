package e2e_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"
	"github.com/lib/pq"

	"lightbox/blob"
	"lightbox/testsupport/seed"
	"lightbox/testsupport/testenv"
)

// listIDs is the project's asset ids in upload order, through the API.
func (s *stack) listIDs(key, project string) []string {
	s.t.Helper()
	return s.walkIDs(key, project, "")
}

// photoFiles gives seeded assets the files ingest would have stored for
// them: each the original, preview and thumbnail of a corpus photo in
// turn, hard-linked, so that even thousands cost little disk. Their sizes
// and types become the photo's.
func (s *stack) photoFiles(ids []string) {
	t := s.t
	t.Helper()
	photos := seed.Photos(t)
	dir := filepath.Join(s.dataDir, "corpus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	type files struct{ original, preview, thumbnail string }
	src := make([]files, len(photos))
	for k, p := range photos {
		data, err := os.ReadFile(filepath.Join(testenv.Corpus(t), "photos", p.Name))
		if err != nil {
			t.Fatal(err)
		}
		src[k] = files{filepath.Join(dir, fmt.Sprintf("%d-original", k)), filepath.Join(dir, fmt.Sprintf("%d-preview", k)), filepath.Join(dir, fmt.Sprintf("%d-thumbnail", k))}
		for path, b := range map[string][]byte{src[k].original: data, src[k].preview: p.Result.Preview.Data, src[k].thumbnail: p.Result.Thumbnail.Data} {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	link := func(from, key string) {
		to := filepath.Join(s.dataDir, "blobs", key)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Remove(to)
		if err := os.Link(from, to); err != nil {
			t.Fatal(err)
		}
	}
	var (
		assets, kinds, keys, sums []string
		sizes, widths, heights    []int64
	)
	for i, id := range ids {
		k := i % len(photos)
		p := photos[k]
		var blobKey string
		if err := s.env.DB.Get(&blobKey, `SELECT blob_key FROM assets WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		link(src[k].original, blobKey)
		if _, err := s.env.DB.Exec(`UPDATE assets SET width_px = $2, height_px = $3, content_type = 'image/jpeg', upload_size = $4
			WHERE id = $1`, id, p.Result.Width, p.Result.Height, p.Bytes); err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			kind string
			from string
			out  []byte
			w, h int
		}{{blob.KindPreview, src[k].preview, p.Result.Preview.Data, p.Result.Preview.Width, p.Result.Preview.Height},
			{blob.KindThumbnail, src[k].thumbnail, p.Result.Thumbnail.Data, p.Result.Thumbnail.Width, p.Result.Thumbnail.Height}} {
			key := blob.DerivedKey(uuid.MustParse(id), f.kind)
			link(f.from, key)
			assets, kinds, keys = append(assets, id), append(kinds, f.kind), append(keys, key)
			sums = append(sums, strings.Repeat("0", 64))
			sizes, widths, heights = append(sizes, int64(len(f.out))), append(widths, int64(f.w)), append(heights, int64(f.h))
		}
	}
	if _, err := s.env.DB.Exec(`INSERT INTO asset_files (asset_id, kind, blob_key, content_type, byte_size, checksum_sha256, width_px, height_px)
		SELECT a, k, b, 'image/jpeg', n, c, w, h FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::int[], $7::int[]) AS u(a, k, b, n, c, w, h)
		ON CONFLICT (asset_id, kind) DO NOTHING`,
		pq.Array(assets), pq.Array(kinds), pq.Array(keys), pq.Array(sizes), pq.Array(sums), pq.Array(widths), pq.Array(heights)); err != nil {
		t.Fatal(err)
	}
}

// myRating is the caller's rating of an asset as the API answers it.
type myRating struct {
	Picked, Rejected bool
	Rating           *int
}

func (r *myRating) String() string {
	if r == nil {
		return "none"
	}
	stars := 0
	if r.Rating != nil {
		stars = *r.Rating
	}
	return fmt.Sprintf("picked=%v rejected=%v stars=%d", r.Picked, r.Rejected, stars)
}

// ratings reads the caller's rating of each of the project's assets.
func (s *stack) ratings(key, project string) map[string]*myRating {
	s.t.Helper()
	out := map[string]*myRating{}
	var page struct {
		Items []struct {
			ID       string
			MyRating *myRating
		}
	}
	s.apiGet(key, "/v1/projects/"+project+"/assets?limit=1000", &page)
	for _, a := range page.Items {
		out[a.ID] = a.MyRating
	}
	return out
}

// key presses keys one after another, each a whole press.
func (b *browser) key(what string, keys string, mods ...chromedp.Modifier) {
	b.t.Helper()
	b.run(what, chromedp.KeyEvent(keys, chromedp.KeyModifiers(mods...)))
}

// logErrors reports the page's uncaught errors and console errors in the
// test's log, where a failure's cause is then found.
func (b *browser) logErrors() {
	err := chromedp.Listen(b.ctx, func(ev any) {
		switch e := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			d := e.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			b.t.Logf("page error at %s:%d: %s", d.URL, d.LineNumber+1, text)
		case *cdpruntime.EventConsoleAPICalled:
			if e.Type == cdpruntime.ConsoleAPICalledTypeError || e.Type == cdpruntime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range e.Args {
					args = append(args, a.Description+fmt.Sprint(a.Value))
				}
				b.t.Logf("console %s: %s", e.Type, strings.Join(args, " "))
			}
		}
	})
	if err != nil {
		b.t.Fatal(err)
	}
}

// tab opens another tab of the same browser, signed in by its cookie.
func (b *browser) tab() *browser {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("open a tab: %v", err)
	}
	return &browser{t: b.t, ctx: ctx}
}

// TestCullByKeyboard culls 200 photos by keys alone, half in the grid and
// half in the loupe, with the option to move on after a flag, and finds
// every rating in the API; then undoes, compares three photos and keeps
// one, sees a pick made in one tab reach another, and sees a change the
// server refuses rolled back with a message.
func TestCullByKeyboard(t *testing.T) {
	t.Parallel()
	const n = 200
	chrome := chromium(t)
	s, key := gridStack(t, "cull-stack.log")
	project := s.seeded(key, "Harbour wedding", n)
	ids := s.listIDs(key, project)
	s.photoFiles(ids)
	tile := func(i int) string { return fmt.Sprintf(`#grid li[data-asset="%s"]`, ids[i]) }

	b := newBrowser(t, chrome)
	b.logErrors()
	b.signIn(s.url+"/#/projects/"+project+"/photos", key)
	b.waitJS("the grid to list every photo", fmt.Sprintf(`document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (%d)'`, n))
	b.run("move on after a flag", chromedp.Click(chromedp.CSS("#more-actions")), chromedp.Click(chromedp.CSS("#setting-advance")))
	b.shot("cull-01-grid")

	// Into the grid by Tab alone.
	for range 60 {
		if eval[bool](b, `!!document.activeElement.closest('#grid')`) {
			break
		}
		b.key("press Tab", kb.Tab)
	}
	b.waitJS("the first photo to have the focus", `document.activeElement.matches(`+jsq(tile(0))+`)`)

	// Photo i gets i%6 stars (0 clears them) and then a pick, a reject or
	// no flag, which moves on to the next photo.
	want := make([]myRating, n)
	for i := range n {
		stars := i % 6
		flag := []string{"p", "x", "u"}[i%3]
		want[i] = myRating{Picked: flag == "p", Rejected: flag == "x"}
		if stars > 0 {
			want[i].Rating = &stars
		}
		if i == n/2 {
			b.shot("cull-02-grid-half-culled")
			b.key("open the loupe", kb.Enter)
			b.waitJS("the loupe on photo 101", `document.querySelector('#loupe[open] img.preview-img')?.dataset.asset === `+jsq(ids[i]))
			b.waitJS("its preview drawn", `(() => { const i = document.querySelector('#loupe .loupe-stage img.preview-img'); return i && i.complete && i.naturalWidth > 0; })()`)
			b.shot("cull-03-loupe")
		}
		b.key(fmt.Sprintf("stars on photo %d", i+1), fmt.Sprint(stars))
		b.key(fmt.Sprintf("flag photo %d", i+1), flag)
		if i < n-1 {
			where := `document.activeElement.matches(` + jsq(tile(i+1)) + `)`
			if i >= n/2 {
				where = `document.querySelector('#loupe img.preview-img')?.dataset.asset === ` + jsq(ids[i+1])
			}
			b.waitJS(fmt.Sprintf("photo %d after the flag", i+2), where)
		}
	}
	b.shot("cull-04-loupe-last")
	checkRatings := func(what string, want func(i int) myRating) {
		t.Helper()
		var got map[string]*myRating
		s.waitFor(what, func() bool {
			got = s.ratings(key, project)
			for i, id := range ids {
				r, w := got[id], want(i)
				if r == nil || r.String() != w.String() {
					return false
				}
			}
			return true
		})
	}
	checkRatings("every rating through the API", func(i int) myRating { return want[i] })

	// Undo: the last flag, then the last stars.
	b.key("undo", "z", chromedp.ModifierCtrl)
	b.key("undo again", "z", chromedp.ModifierCtrl)
	want[n-1] = myRating{}
	checkRatings("the last photo's reject and stars undone", func(i int) myRating { return want[i] })
	b.waitJS("the loupe to show no flag", `document.querySelector('#loupe-marks').textContent === ''`)
	b.shot("cull-05-undone")

	// Compare the first three photos and keep the second.
	b.key("close the loupe", kb.Escape)
	b.waitJS("the loupe closed", `!document.querySelector('#loupe[open]')`)
	b.key("to the first photo", kb.Home)
	b.key("select the second", kb.ArrowRight, chromedp.ModifierShift)
	b.key("select the third", kb.ArrowRight, chromedp.ModifierShift)
	b.waitJS("three selected", `document.querySelector('#selection-status').textContent === '3 selected'`)
	b.key("compare", "c")
	b.waitJS("three photos side by side", `document.querySelectorAll('#compare[open] .pane').length === 3 &&
		[...document.querySelectorAll('#compare .pane img')].every((i) => i.complete && i.naturalWidth > 0)`)
	b.key("zoom all to 100 %", "z")
	b.waitJS("the panes zoomed", `document.querySelector('#compare-panes.zoomed') !== null`)
	eval[bool](b, `(() => { const s = document.querySelector('#compare .pane .pane-stage'); s.scrollLeft = 40; s.scrollTop = 30; return true; })()`)
	b.waitJS("the other panes panned with the first", `(() => {
		const [a, ...rest] = [...document.querySelectorAll('#compare .pane-stage')];
		const fx = (s) => s.scrollLeft / Math.max(1, s.scrollWidth - s.clientWidth);
		return a.scrollLeft > 0 && rest.every((s) => Math.abs(fx(s) - fx(a)) < 0.02);
	})()`)
	b.shot("cull-06-compare")
	before := []myRating{want[0], want[1], want[2]}
	b.key("choose the second", kb.ArrowRight)
	b.key("keep it", "k")
	b.waitJS("compare closed", `!document.querySelector('#compare[open]')`)
	want[0].Picked, want[0].Rejected = false, true
	want[1].Picked, want[1].Rejected = true, false
	want[2].Picked, want[2].Rejected = false, true
	checkRatings("the second kept, the others rejected", func(i int) myRating { return want[i] })
	b.waitJS("the tiles to show it", `document.querySelector(`+jsq(tile(1))+`).dataset.flag === 'picked' &&
		document.querySelector(`+jsq(tile(0))+`).dataset.flag === 'rejected' && document.querySelector(`+jsq(tile(2))+`).dataset.flag === 'rejected'`)
	b.shot("cull-07-kept")
	b.key("undo the keeper", "z", chromedp.ModifierCtrl)
	copy(want, before)
	checkRatings("the three as they were", func(i int) myRating { return want[i] })

	// A second tab sees a pick made in the first.
	other := b.tab()
	other.run("open the project in a second tab", chromedp.Navigate(s.url+"/#/projects/"+project+"/photos"))
	other.waitJS("its grid", `document.querySelector(`+jsq(tile(5))+`) !== null`)
	if f := eval[string](other, `document.querySelector(`+jsq(tile(5))+`).dataset.flag`); f != "" {
		t.Fatalf("photo 6 is flagged %q before the pick", f)
	}
	b.run("select photo 6", chromedp.Click(chromedp.CSS(tile(5))))
	start := time.Now()
	b.key("pick it", "p")
	other.waitJS("the pick in the second tab", `document.querySelector(`+jsq(tile(5))+`).dataset.flag === 'picked'`)
	t.Logf("the second tab showed the pick %v after the key", time.Since(start).Round(time.Millisecond))
	other.viewShot("cull-08-second-tab")

	// A change the server refuses: the photo was deleted meanwhile, out of
	// sight of the event stream.
	if _, err := s.env.DB.Exec(`DELETE FROM assets WHERE id = $1`, ids[8]); err != nil {
		t.Fatal(err)
	}
	b.run("select photo 9", chromedp.Click(chromedp.CSS(tile(8))))
	b.key("pick it", "p")
	b.waitJS("the pick rolled back with a message", `document.querySelector(`+jsq(tile(8))+`).dataset.flag === '' &&
		document.querySelector('#status').textContent.startsWith('Not saved')`)
	b.viewShot("cull-09-refused")
}

// jsq quotes a string for JavaScript.
func jsq(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// setField sets a form field as a person would and tells the page.
func (b *browser) setField(sel, value string) {
	b.t.Helper()
	eval[bool](b, `(() => { const el = document.querySelector(`+jsq(sel)+`); el.value = `+jsq(value)+`;
		el.dispatchEvent(new Event('change', { bubbles: true })); return true; })()`)
}

// moreFilters clicks sel among the grid's filters that fold away, showing
// them first.
func (b *browser) moreFilters(what, sel string) {
	b.t.Helper()
	b.waitJS("the grid's filters", `!!document.querySelector('#filters-toggle')`)
	if !eval[bool](b, `document.querySelector('#filters-toggle').getAttribute('aria-expanded') === 'true'`) {
		b.run("show the filters", chromedp.Click(chromedp.CSS("#filters-toggle")))
	}
	b.run(what, chromedp.Click(chromedp.CSS(sel)))
}

// waitView waits until the grid shows exactly want, in that order, as the
// page's own culling state has it.
func (b *browser) waitView(what string, want []string) {
	b.t.Helper()
	b.waitJS(what, fmt.Sprintf(`import('/static/cull.js').then((c) => c.viewIds().join() === %s)`, jsq(strings.Join(want, ","))))
}

// TestGridFiltersMatchTheAPI sets the grid's filters and sorts as a person
// would and finds the photos the API lists for the same filters, in the
// same order; the counts follow ratings made elsewhere at once; the text
// search shows what the API's search finds; an edit marks its tile.
func TestGridFiltersMatchTheAPI(t *testing.T) {
	t.Parallel()
	const n = 300
	chrome := chromium(t)
	s, key := gridStack(t, "filters-stack.log")
	project := s.seeded(key, "Season", n)
	ids := s.listIDs(key, project)
	s.photoFiles(ids[:40])
	var actions []map[string]any
	for i, id := range ids {
		act := map[string]any{"assetId": id, "picked": i%4 == 0, "rejected": i%4 == 1}
		if i%5 > 0 {
			act["rating"] = i % 5
		}
		actions = append(actions, act)
	}
	if code := s.call("POST", "/v1/projects/"+project+"/cull:applyAction", key, map[string]any{"actions": actions}, nil); code != 200 {
		t.Fatalf("cull: %d", code)
	}

	b := newBrowser(t, chrome)
	b.logErrors()
	b.signIn(s.url+"/#/projects/"+project+"/photos", key)
	b.waitJS("the grid", fmt.Sprintf(`document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (%d)'`, n))

	// The camera most photos have, as the filter names it.
	camera := eval[string](b, `(() => { const o = [...document.querySelectorAll('#filter-camera option')].slice(1)
		.sort((a, b) => +b.textContent.replace(/\D/g, '') - +a.textContent.replace(/\D/g, '')); return o[0].value; })()`)
	// Capture days the shoot spans, as the browser's calendar has them.
	days := eval[[]string](b, `import('/static/cull.js').then((c) => {
		const ts = c.viewRows().map((r) => r.captured).filter((x) => x !== null).sort((a, b) => a - b);
		const day = (t) => { const d = new Date(t); return d.getFullYear() + '-' + String(d.getMonth() + 1).padStart(2, '0') + '-' + String(d.getDate()).padStart(2, '0'); };
		return [day(ts[Math.floor(ts.length / 4)]), day(ts[Math.floor(ts.length / 2)])];
	})`)
	iso := func(day string, end bool) string {
		clock := "T00:00:00"
		if end {
			clock = "T23:59:59.999"
		}
		return eval[string](b, `new Date(`+jsq(day+clock)+`).toISOString()`)
	}

	steps := []struct {
		what  string
		do    func()
		query string
	}{
		{"all, in upload order", func() {}, ""},
		{"picked", func() { b.run("picked", chromedp.Click(chromedp.CSS(`button[data-flag="picked"]`))) }, "picked=true"},
		{"picked, 2 stars or more", func() { b.setField("#filter-stars", "2") }, "picked=true&ratingMin=2"},
		{"unflagged, 2 stars or more, by capture time", func() {
			b.run("unflagged", chromedp.Click(chromedp.CSS(`button[data-flag="unflagged"]`)))
			b.setField("#sort", "captured")
		}, "picked=false&rejected=false&ratingMin=2&sort=capturedAt"},
		{"and one camera, newest first", func() {
			b.setField("#filter-camera", camera)
			b.run("reverse", chromedp.Click(chromedp.CSS("#sort-order")))
		}, "picked=false&rejected=false&ratingMin=2&camera=" + url.QueryEscape(camera) + "&sort=capturedAt&order=desc"},
		{"any flag, two days, by name", func() {
			b.run("any flag", chromedp.Click(chromedp.CSS(`button[data-flag="any"]`)))
			b.setField("#filter-stars", "0")
			b.setField("#filter-from", days[0])
			b.setField("#filter-to", days[1])
			b.setField("#sort", "filename")
		}, "camera=" + url.QueryEscape(camera) + "&from=" + url.QueryEscape(iso(days[0], false)) + "&to=" + url.QueryEscape(iso(days[1], true)) + "&sort=filename&order=desc"},
		{"failed", func() {
			b.moreFilters("reset", "#filter-reset")
			b.moreFilters("failed", `button[data-filter="failed"]`)
		}, "readiness=failed&sort=filename&order=desc"},
		{"rejected, searchable, by name", func() {
			b.run("rejected", chromedp.Click(chromedp.CSS(`button[data-flag="rejected"]`)))
			b.moreFilters("searchable", `button[data-filter="searchable"]`)
			b.run("forwards", chromedp.Click(chromedp.CSS("#sort-order")))
		}, "rejected=true&readiness=search,ai&sort=filename"},
	}
	for i, st := range steps {
		st.do()
		want := s.walkIDs(key, project, st.query)
		if len(want) == 0 {
			t.Fatalf("%s: the API lists nothing; the step tests nothing", st.what)
		}
		b.waitView(st.what, want)
		b.waitJS(st.what+": the status", fmt.Sprintf(`/^%s of|^%s photos$/.test(document.querySelector('#view-status').textContent.replace(/,/g, ''))`, fmt.Sprint(len(want)), fmt.Sprint(len(want))))
		b.waitJS(st.what+": the first tile", `document.querySelector('#grid li[aria-posinset="1"]')?.dataset.asset === `+jsq(want[0]))
		b.viewShot(fmt.Sprintf("filters-%02d", i+1))
	}

	// Counts follow a change made elsewhere (another client of the API).
	b.moreFilters("reset", "#filter-reset")
	b.setField("#sort", "uploaded")
	picked := len(s.walkIDs(key, project, "picked=true"))
	b.waitJS("the picked count", fmt.Sprintf(`document.querySelector('button[data-flag="picked"]').textContent === 'Picked (%d)'`, picked))
	if code := s.call("POST", "/v1/projects/"+project+"/cull:applyAction", key, map[string]any{"actions": []map[string]any{
		{"assetId": ids[2], "picked": true}, {"assetId": ids[3], "picked": true}}}, nil); code != 200 {
		t.Fatalf("cull: %d", code)
	}
	b.waitJS("the picked count to follow", fmt.Sprintf(`document.querySelector('button[data-flag="picked"]').textContent === 'Picked (%d)'`, picked+2))

	// An edit marks its tile.
	if code := s.call("POST", "/v1/assets/"+ids[1]+"/edits", key, map[string]any{"params": map[string]any{"exposure": 0.3}}, nil); code != 201 {
		t.Fatalf("edit: %d", code)
	}
	b.waitJS("the edit mark", `document.querySelector('#grid li[data-asset="`+ids[1]+`"] .edit-mark')?.textContent === '✎ Edited'`)

	// The text search: the API's matches with the grid's filters.
	b.run("picked only", chromedp.Click(chromedp.CSS(`button[data-flag="picked"]`)))
	word := strings.Fields(camera)[0]
	b.run("search", chromedp.SendKeys(chromedp.CSS("#photo-search"), word+kb.Enter))
	var res struct{ Results []struct{ AssetID string } }
	if code := s.call("POST", "/v1/projects/"+project+"/search", key, map[string]any{"q": word, "limit": 100, "filters": map[string]any{"picked": true}}, &res); code != 200 || len(res.Results) == 0 {
		t.Fatalf("search: %d %+v", code, res)
	}
	var want []string
	for _, r := range res.Results {
		want = append(want, r.AssetID)
	}
	b.waitView("the search's matches", want)
	b.waitJS("the search said", `document.querySelector('#view-status').textContent.includes('match')`)
	b.viewShot("filters-search")
}

// walkIDs lists the ids of every page of a query of the project's assets.
func (s *stack) walkIDs(key, project, query string) []string {
	s.t.Helper()
	var ids []string
	cursor := ""
	for {
		var page struct {
			Items    []struct{ ID string }
			PageInfo struct{ NextCursor *string }
		}
		s.apiGet(key, "/v1/projects/"+project+"/assets?limit=1000&"+query+"&cursor="+url.QueryEscape(cursor), &page)
		for _, a := range page.Items {
			ids = append(ids, a.ID)
		}
		if page.PageInfo.NextCursor == nil {
			return ids
		}
		cursor = *page.PageInfo.NextCursor
	}
}

// drawn is a JavaScript test that the loupe shows asset id's preview,
// loaded and drawn.
func drawn(id string) string {
	return `(() => { const i = document.querySelector('#loupe[open] .loupe-stage img.preview-img');
		return !!i && i.dataset.asset === ` + jsq(id) + ` && i.complete && i.naturalWidth > 0; })()`
}

// TestLoupe opens a photo full-window by keys: the preview with the EXIF
// line, the next preview loaded ahead, ←/→, the original at 100 % with
// pan by drag and by keys, the keys' help; and at a phone's width a swipe
// to the next photo, then two photos selected by taps, compared, and one
// kept by a tap.
func TestLoupe(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key := gridStack(t, "loupe-stack.log")
	project := s.seeded(key, "Studio", 30)
	ids := s.listIDs(key, project)
	s.photoFiles(ids)
	var originals []struct {
		ID       string
		BlobKey  string `db:"blob_key"`
		WidthPx  int    `db:"width_px"`
		HeightPx int    `db:"height_px"`
	}
	if err := s.env.DB.Select(&originals, `SELECT id, blob_key, width_px, height_px FROM assets WHERE id = ANY($1)`, pq.Array(ids[:3])); err != nil {
		t.Fatal(err)
	}
	original := map[string]int{}
	blobKeys := map[string]string{}
	for _, o := range originals {
		original[o.ID], blobKeys[o.ID] = o.WidthPx, o.BlobKey
	}

	b := newBrowser(t, chrome)
	b.logErrors()
	b.signIn(s.url+"/#/projects/"+project+"/photos", key)
	b.waitJS("the grid", `document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (30)'`)
	b.run("focus the first photo", chromedp.Focus(chromedp.CSS(`#grid li[aria-posinset="1"]`)))
	b.key("open the loupe", kb.Enter)
	b.waitJS("the first photo drawn", drawn(ids[0]))
	if got := b.text("#loupe-pos"); got != "1 of 30" {
		t.Errorf("the loupe says %q, want 1 of 30", got)
	}
	if exif := b.text("#loupe-exif"); !strings.Contains(exif, "ISO") || !strings.Contains(exif, " s · ") {
		t.Errorf("the EXIF line reads %q", exif)
	}
	b.waitJS("the next preview loaded ahead", `performance.getEntriesByType('resource').some((e) => e.name.includes('derived/`+ids[1]+`/preview.jpg'))`)
	b.viewShot("loupe-01-first")
	b.key("next", kb.ArrowRight)
	b.waitJS("the second photo drawn", drawn(ids[1]))
	b.key("previous", kb.ArrowLeft)
	b.waitJS("the first photo again", drawn(ids[0]))
	b.key("pick", "p")
	b.waitJS("the flag shown", `document.querySelector('#loupe-marks').textContent === '✓ Picked'`)

	// 100 %: the original, the size of its pixels, panned by drag and keys.
	b.key("zoom", "z")
	b.waitJS("the original at 100 %", fmt.Sprintf(`(() => { const i = document.querySelector('#loupe .loupe-stage.zoomed img.zoom-img');
		return !!i && i.src.includes(%s) && i.dataset.original === 'true' && i.complete && i.naturalWidth === %d &&
			Math.abs(i.getBoundingClientRect().width - %d / devicePixelRatio) < 2; })()`, jsq(blobKeys[ids[0]]), original[ids[0]], original[ids[0]]))
	left := eval[float64](b, `document.querySelector('#loupe-stage').scrollLeft`)
	b.run("drag the photo", chromedp.MouseEvent("mousePressed", 700, 400, chromedp.ButtonLeft),
		chromedp.MouseEvent("mouseMoved", 600, 350, chromedp.ButtonLeft), chromedp.MouseEvent("mouseReleased", 600, 350, chromedp.ButtonLeft))
	b.waitJS("the photo panned by the drag", fmt.Sprintf(`document.querySelector('#loupe-stage').scrollLeft >= %f + 90`, left))
	left = eval[float64](b, `document.querySelector('#loupe-stage').scrollLeft`)
	b.key("pan by key", kb.ArrowRight)
	b.waitJS("the photo panned by the key, still the same", fmt.Sprintf(`document.querySelector('#loupe-stage').scrollLeft > %f + 10 &&
		!!document.querySelector('#loupe .loupe-stage.zoomed')`, left))
	b.viewShot("loupe-02-100-percent")
	b.key("back from 100 %", kb.Escape)
	b.waitJS("the fitted photo", drawn(ids[0])+` && !document.querySelector('#loupe .loupe-stage.zoomed')`)

	b.key("the details", "i")
	b.waitJS("the photo's details over the loupe", `!!document.querySelector('#details[open] #exif') && !!document.querySelector('#loupe[open]')`)
	b.key("close the details", kb.Escape)
	b.waitJS("back in the loupe", `!document.querySelector('#details[open]') && !!document.querySelector('#loupe[open]')`)

	b.key("the keys", "?")
	b.waitJS("the keys' help", `document.querySelector('#keys-help[open]') !== null`)
	help := b.text("#keys-help")
	for _, want := range []string{"Pick", "Reject", "Zoom to 100 %", "Keep the photo chosen, reject the others", "Undo", "Move to the next photo after a flag"} {
		if !strings.Contains(help, want) {
			t.Errorf("the help does not say %q:\n%s", want, help)
		}
	}
	b.viewShot("loupe-03-keys")
	b.key("close the help", kb.Escape)
	b.waitJS("the help closed", `!document.querySelector('#keys-help[open]')`)
	b.key("close the loupe", kb.Escape)
	b.waitJS("back on the first photo's tile", `!document.querySelector('#loupe[open]') && document.activeElement.dataset.asset === `+jsq(ids[0]))

	// A phone: a swipe moves on.
	b.run("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateTouch))
	b.viewShot("loupe-04-phone-grid")
	b.key("open the loupe", kb.Enter)
	b.waitJS("the first photo drawn", drawn(ids[0]))
	b.run("swipe left", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		touch := func(typ input.DispatchTouchEventType, x float64) error {
			pts := []*input.TouchPoint{{X: x, Y: 400}}
			if typ == input.DispatchTouchEventTypeTouchEnd {
				pts = []*input.TouchPoint{}
			}
			_, err := cdp.Call(ctx, tg, input.DispatchTouchEvent, input.DispatchTouchEventParams{Type: typ, TouchPoints: pts})
			return err
		}
		if err := touch(input.DispatchTouchEventTypeTouchStart, 300); err != nil {
			return err
		}
		for x := 280.0; x >= 100; x -= 20 {
			if err := touch(input.DispatchTouchEventTypeTouchMove, x); err != nil {
				return err
			}
		}
		return touch(input.DispatchTouchEventTypeTouchEnd, 100)
	}))
	b.waitJS("the second photo after the swipe", drawn(ids[1]))
	b.viewShot("loupe-05-phone")

	// Without Ctrl, taps select several; compare them and keep one by tap.
	b.run("close the loupe", chromedp.Click(chromedp.CSS("#loupe-close")))
	b.waitJS("the loupe closed", `!document.querySelector('#loupe[open]')`)
	b.run("select several", chromedp.Click(chromedp.CSS("#select-several")))
	b.run("tap the first photo", chromedp.Click(chromedp.CSS(`#grid li[data-asset="`+ids[0]+`"]`)))
	b.run("tap the second photo", chromedp.Click(chromedp.CSS(`#grid li[data-asset="`+ids[1]+`"]`)))
	b.waitJS("two selected", `document.querySelector('#selection-status').textContent === '2 selected'`)
	b.run("compare", chromedp.Click(chromedp.CSS("#compare")))
	b.waitJS("two photos side by side", `document.querySelectorAll('#compare[open] .pane').length === 2 &&
		[...document.querySelectorAll('#compare .pane img')].every((i) => i.complete && i.naturalWidth > 0)`)
	b.viewShot("loupe-06-phone-compare")
	b.run("keep the second", chromedp.Click(chromedp.CSS(`#compare button[data-keep="2"]`)))
	s.waitFor("the second kept, the first rejected", func() bool {
		got := s.ratings(key, project)
		return got[ids[0]].String() == (&myRating{Rejected: true}).String() && got[ids[1]].String() == (&myRating{Picked: true}).String()
	})
}
