package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"
	"github.com/lib/pq"

	"lightbox/blob"
	"lightbox/internal/seed"
	"lightbox/internal/testenv"
)

// listIDs is the project's asset ids in upload order, through the API.
func (s *stack) listIDs(key, project string) []string {
	s.t.Helper()
	var ids []string
	cursor := ""
	for {
		var page struct {
			Items    []struct{ ID string }
			PageInfo struct{ NextCursor *string }
		}
		s.apiGet(key, "/v1/projects/"+project+"/assets?limit=1000&cursor="+cursor, &page)
		for _, a := range page.Items {
			ids = append(ids, a.ID)
		}
		if page.PageInfo.NextCursor == nil {
			return ids
		}
		cursor = *page.PageInfo.NextCursor
	}
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
		}{{"preview", src[k].preview, p.Result.Preview.Data, p.Result.Preview.Width, p.Result.Preview.Height},
			{"thumbnail", src[k].thumbnail, p.Result.Thumbnail.Data, p.Result.Thumbnail.Width, p.Result.Thumbnail.Height}} {
			key := blob.DerivedKey(uuid.MustParse(id), f.kind, "jpg")
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
	b.run("move on after a flag", chromedp.Click(chromedp.CSS("#setting-advance")))
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
	b.key("keep the second", "2")
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
