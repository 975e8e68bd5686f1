package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"lightbox/testsupport/testenv"
)

// layoutFigures is what measureLayout reads off the photo grid.
type layoutFigures struct {
	FirstTop   float64 // px from the window's top to the first row of photos
	PhotoShare float64 // the visible tiles' area over the window's, 0..1
	Luminance  float64 // of the colour behind the grid, 0 (black)..1 (white)
	Overflow   bool    // the page is wider than the window
	Columns    int
	TileWidth  float64
}

// measureLayout measures the grid as the window shows it, scrolled to its
// top. The photos' share is the sum of the visible parts of the tiles
// (each photo's square cell with its line of marks and name under it),
// over the window's area: not the grid's box, which would count the gaps.
// The luminance is the relative luminance (WCAG) of the first opaque
// background under the grid.
const measureLayout = `(() => {
  const tiles = [...document.querySelectorAll('#grid > li:not([hidden])')];
  const W = innerWidth, H = innerHeight;
  let area = 0;
  for (const li of tiles) {
    const r = li.getBoundingClientRect();
    const w = Math.max(0, Math.min(r.right, W) - Math.max(r.left, 0));
    const h = Math.max(0, Math.min(r.bottom, H) - Math.max(r.top, 0));
    area += w * h;
  }
  let el = document.querySelector('#grid'), bg = 'rgba(0, 0, 0, 0)';
  for (; el; el = el.parentElement) {
    bg = getComputedStyle(el).backgroundColor;
    const m = bg.match(/[\d.]+/g).map(Number);
    if (m.length < 4 || m[3] > 0.9) break;
  }
  if (!el) bg = getComputedStyle(document.documentElement).backgroundColor;
  const [r, g, b] = bg.match(/[\d.]+/g).map(Number).map((c) => {
    c /= 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  const first = document.querySelector('#grid > li[aria-posinset="1"]');
  const tops = new Set(tiles.map((li) => Math.round(li.getBoundingClientRect().top)));
  const firstTop = first ? first.getBoundingClientRect().top : -1;
  return {
    FirstTop: firstTop, PhotoShare: area / (W * H), Luminance: 0.2126 * r + 0.7152 * g + 0.0722 * b,
    Overflow: document.documentElement.scrollWidth > W,
    Columns: tiles.filter((li) => Math.round(li.getBoundingClientRect().top) === Math.round(firstTop)).length,
    TileWidth: first ? first.getBoundingClientRect().width : 0,
  };
})()`

// photoShown is a JavaScript function that says how a tile draws its
// photo: the part of the picture that is visible (the image's content box
// as object-fit places it, cut by the image's box and the tile's), its
// width over its height, and the share of the whole picture that part is.
const photoShown = `(sel) => {
  const li = document.querySelector(sel), img = li && li.querySelector('img');
  if (!img || !img.complete || !img.naturalWidth) return null;
  const box = img.getBoundingClientRect(), tile = li.getBoundingClientRect();
  const css = getComputedStyle(img), nw = img.naturalWidth, nh = img.naturalHeight;
  let w = box.width, h = box.height;
  if (css.objectFit === 'contain' || css.objectFit === 'cover') {
    const s = (css.objectFit === 'contain' ? Math.min : Math.max)(box.width / nw, box.height / nh);
    w = nw * s;
    h = nh * s;
  } else if (css.objectFit === 'none') {
    w = nw;
    h = nh;
  }
  const x0 = box.left + (box.width - w) / 2, y0 = box.top + (box.height - h) / 2;
  const vw = Math.min(x0 + w, box.right, tile.right) - Math.max(x0, box.left, tile.left);
  const vh = Math.min(y0 + h, box.bottom, tile.bottom) - Math.max(y0, box.top, tile.top);
  return { ratio: vw / vh, whole: (vw * vh) / (w * h), width: vw, height: vh };
}`

// touchTargets lists the controls of the bars, the filters and the grid's
// own (its size, its full-window switch) that a finger would find smaller
// than 44 px either way.
const touchTargets = `(() => {
  const sel = 'button, select, input, summary, a[href]';
  const roots = [...document.querySelectorAll('header.top, #cull-head, #filter-panel, #grid-tools')];
  const small = [];
  let n = 0;
  for (const root of roots) {
    for (const el of root.querySelectorAll(sel)) {
      if (!el.getClientRects().length || getComputedStyle(el).visibility === 'hidden') continue;
      if (el.type === 'checkbox' || el.type === 'radio') continue; // measured by their labels below
      n++;
      const r = el.getBoundingClientRect();
      if (r.width < 44 || r.height < 44) small.push((el.id || el.textContent.trim() || el.outerHTML.slice(0, 60)) + ' ' + Math.round(r.width) + '×' + Math.round(r.height));
    }
    for (const box of root.querySelectorAll('input[type=checkbox]')) {
      const label = box.closest('label') || document.querySelector('label[for="' + box.id + '"]');
      const r = (label ? label.closest('.check') || label : box).getBoundingClientRect();
      if (!box.getClientRects().length) continue;
      n++;
      if (r.height < 44) small.push(box.id + ' ' + Math.round(r.width) + '×' + Math.round(r.height));
    }
  }
  return { n, small };
})()`

// TestCullingLayout opens a project of real photos, a portrait among them,
// at a laptop's 1280×800 and a phone's 390×844 with a touch screen, on a
// system that asks for light colours: the photos start near the top and
// fill most of the window, on a dark grey, every photo whole in its
// square; nothing is wider than the window; the keys reach the photos
// after a click on the bar; a finger finds every control; the grid hides
// its bars, changes its tiles' size and takes a light theme, each kept
// across a reload; compare shows a rejected photo at full brightness with
// a mark, and 1 to 5 are its stars as everywhere; no key means two things
// in one view, and the help says so.
func TestCullingLayout(t *testing.T) {
	t.Parallel()
	const seeded = 40
	chrome := chromium(t)
	s, key := gridStack(t, "layout-stack.log")
	project := s.seeded(key, "Harbour wedding", seeded)
	s.photoFiles(s.listIDs(key, project))
	// Two portraits through the whole pipeline: an iPhone's, and a photo
	// that is portrait only once its EXIF orientation is applied. They are
	// moved to the front of the upload order.
	portrait, _ := s.upload(key, project, filepath.Join(testenv.Formats(t), "icc", "iphone13mini-displayp3-gainmap.jpg"))
	turned, _ := s.upload(key, project, filepath.Join(testenv.Corpus(t), "odd", "orientation-6.jpg"))
	s.waitFor("the portraits processed, with thumbnails", func() bool {
		return s.count(`SELECT count(*) FROM assets a JOIN asset_files f ON f.asset_id = a.id AND f.kind = 'thumbnail'
			WHERE a.id IN ($1, $2) AND a.status IN ('cull', 'search', 'ai')`, portrait, turned) == 2
	})
	if _, err := s.env.DB.Exec(`UPDATE assets SET created_at = now() - interval '1 day' - (CASE WHEN id = $1 THEN interval '1 second' ELSE interval '0' END)
		WHERE id IN ($1, $2)`, portrait, turned); err != nil {
		t.Fatal(err)
	}
	ratio := map[string]float64{}
	for _, id := range []string{portrait, turned} {
		var a struct{ WidthPx, HeightPx float64 }
		s.apiGet(key, "/v1/assets/"+id, &a)
		if a.WidthPx >= a.HeightPx || a.HeightPx == 0 {
			t.Fatalf("asset %s is %v×%v, not a portrait", id, a.WidthPx, a.HeightPx)
		}
		ratio[id] = a.WidthPx / a.HeightPx
	}
	n := seeded + 2

	b := newBrowser(t, chrome)
	b.logErrors()
	b.run("a laptop's window, on a system that asks for light colours", chromedp.EmulateViewport(1280, 800),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}})
			return err
		}))
	b.signIn(s.url+"/#/projects/"+project+"/photos", key)
	gridReady := func(what string) {
		t.Helper()
		b.waitJS(what, fmt.Sprintf(`document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (%d)' &&
			document.querySelector('#grid > li[aria-posinset="1"]')?.dataset.asset === %s &&
			[...document.querySelectorAll('#grid > li:not([hidden]) img')].filter((i) => i.getBoundingClientRect().top < innerHeight)
				.every((i) => i.complete && i.naturalWidth > 0) && scrollY === 0`, n, jsq(portrait)))
	}
	gridReady("the grid with the portraits first, its first screen drawn")
	laptop := eval[layoutFigures](b, measureLayout)
	size := eval[string](b, `document.querySelector('#tile-size').value`)
	t.Logf("1280×800: first row at %.0f px, photos %.1f %% of the window, %d columns of %.0f px, background luminance %.3f",
		laptop.FirstTop, 100*laptop.PhotoShare, laptop.Columns, laptop.TileWidth, laptop.Luminance)
	b.viewShot("layout-01-laptop")
	checkLayout(t, "1280×800", laptop)
	if laptop.PhotoShare < 0.75 {
		t.Errorf("1280×800: the photos take %.1f %% of the window, want at least 75 %%", 100*laptop.PhotoShare)
	}
	for _, id := range []string{portrait, turned} {
		checkWhole(t, b, id, ratio[id])
	}

	// A click on the bar, or on a filter, leaves the keys with the photos.
	tile := func(i int) string { return fmt.Sprintf(`#grid > li[aria-posinset="%d"]`, i) }
	selected := func(i int) string {
		return `document.querySelector(` + jsq(tile(i)) + `)?.getAttribute('aria-selected') === 'true' &&
			document.querySelector('#selection-status').textContent === '1 selected'`
	}
	b.run("select the first photo", chromedp.Click(chromedp.CSS(tile(1))))
	b.run("pick it from the bar", chromedp.Click(chromedp.CSS("#pick")))
	b.waitJS("the first photo picked", `document.querySelector(`+jsq(tile(1))+`).dataset.flag === 'picked'`)
	b.key("→", kb.ArrowRight)
	b.waitJS("→ to select the second photo", selected(2))
	b.run("a flag filter", chromedp.Click(chromedp.CSS(`button[data-flag="any"]`)))
	b.key("→", kb.ArrowRight)
	b.waitJS("→ to select the third photo", selected(3))
	b.run("the tile size", chromedp.Click(chromedp.CSS("#tile-size")))
	b.key("→", kb.ArrowRight)
	b.waitJS("→ to select the fourth photo", selected(4))
	b.key("Space", " ")
	b.waitJS("Space to deselect it, not to press a button", `document.querySelector(`+jsq(tile(4))+`).getAttribute('aria-selected') === 'false' &&
		document.querySelector('#selection-status').textContent === 'None selected'`)

	// F hides the bars: the photos alone.
	b.key("F", "f")
	b.waitJS("the bars hidden, the grid at its top", `document.body.classList.contains('full-grid') && !document.querySelector('#cull-head').getClientRects().length &&
		(scrollY === 0 || !!window.scrollTo(0, 0)) && !!document.querySelector('#grid > li[aria-posinset="1"]:not([hidden])')`)
	full := eval[layoutFigures](b, measureLayout)
	t.Logf("1280×800 without the bars: first row at %.0f px, photos %.1f %% of the window", full.FirstTop, 100*full.PhotoShare)
	if full.FirstTop > 16 || full.PhotoShare < 0.85 {
		t.Errorf("without the bars the first row is at %.0f px and the photos take %.1f %%", full.FirstTop, 100*full.PhotoShare)
	}
	b.viewShot("layout-02-full-grid")
	b.run("show the bars again", chromedp.Click(chromedp.CSS("#full-grid-exit")))
	b.waitJS("the bars back", `!document.body.classList.contains('full-grid') && document.querySelector('#cull-head').getClientRects().length > 0`)

	// Bigger tiles, and a light theme: both kept across a reload.
	b.setField("#tile-size", "320")
	b.waitJS("bigger tiles", fmt.Sprintf(`document.querySelector(%s).getBoundingClientRect().width >= 320`, jsq(tile(1))))
	b.run("the light theme", chromedp.Click(chromedp.CSS("#theme-light")))
	b.run("reload", chromedp.Reload())
	gridReady("the grid again")
	light := eval[layoutFigures](b, measureLayout)
	if light.TileWidth < 320 || light.Luminance < 0.6 {
		t.Errorf("after a reload the tiles are %.0f px wide (want at least 320) and the background's luminance is %.3f (want light)",
			light.TileWidth, light.Luminance)
	}
	b.viewShot("layout-03-light-big")
	b.run("the dark theme again", chromedp.Click(chromedp.CSS("#theme-light")))
	b.setField("#tile-size", size)
	b.waitJS("dark again, the tiles as at first", fmt.Sprintf(`document.documentElement.dataset.theme === 'dark' &&
		Math.abs(document.querySelector(%s).getBoundingClientRect().width - %f) < 1`, jsq(tile(1)), laptop.TileWidth))

	// Compare: a rejected photo at full brightness, marked; 1 to 5 are stars.
	b.run("select the first photo", chromedp.Click(chromedp.CSS(tile(1))))
	b.key("reject it", "x")
	b.key("select the second too", kb.ArrowRight, chromedp.ModifierShift)
	b.key("and the third", kb.ArrowRight, chromedp.ModifierShift)
	b.key("compare", "c")
	b.waitJS("three photos side by side", `document.querySelectorAll('#compare[open] .pane').length === 3 &&
		[...document.querySelectorAll('#compare .pane img')].every((i) => i.complete && i.naturalWidth > 0)`)
	rejected := `document.querySelector('#compare .pane[data-asset="` + portrait + `"]')`
	dimmed := eval[float64](b, `(() => { let o = 1; for (let el = `+rejected+` .querySelector('img'); el; el = el.parentElement) {
		const s = getComputedStyle(el); o *= Number(s.opacity); if (s.filter !== 'none') o = -1; } return o; })()`)
	if dimmed != 1 {
		t.Errorf("the rejected photo in compare is drawn at opacity %v (-1: filtered), want 1", dimmed)
	}
	if mark := eval[string](b, `(() => { const m = `+rejected+`.querySelector('.pane-badge');
		return m && m.getClientRects().length && getComputedStyle(m).visibility !== 'hidden' ? m.textContent : ''; })()`); !strings.Contains(mark, "✕") {
		t.Errorf("the rejected photo in compare has no visible ✕ mark (%q)", mark)
	}
	b.viewShot("layout-04-compare")
	b.key("the second photo", kb.ArrowRight)
	b.key("3 stars", "3")
	second := eval[string](b, `document.querySelector('#compare .pane.current').dataset.asset`)
	b.waitJS("3 stars on the second photo, compare still open", `!!document.querySelector('#compare[open]') &&
		import('/static/cull.js').then((c) => c.marksOf(`+jsq(second)+`).rating === 3)`)
	b.key("the keys", "?")
	b.waitJS("the keys' help", `document.querySelector('#keys-help[open]') !== null`)
	help := eval[map[string][]string](b, `Object.fromEntries([...document.querySelectorAll('#keys-help section[data-view]')].map((s) =>
		[s.dataset.view, [...s.querySelectorAll('dt kbd')].map((k) => k.textContent)]))`)
	for _, view := range []string{"grid", "loupe", "compare"} {
		if len(help[view]) == 0 {
			t.Errorf("the help has no keys for %s: %v", view, help)
		}
		seen := map[string]bool{}
		for _, k := range help[view] {
			if seen[k] {
				t.Errorf("the help lists %s twice for %s", k, view)
			}
			seen[k] = true
		}
	}
	if what := b.text(`#keys-help section[data-view="compare"]`); !strings.Contains(what, "3 stars") || strings.Contains(what, "Keep photo 3") {
		t.Errorf("in compare the help does not say 3 is 3 stars:\n%s", what)
	}
	b.viewShot("layout-05-keys")
	b.key("close the help", kb.Escape)
	b.waitJS("the help closed", `!document.querySelector('#keys-help[open]')`)
	b.key("keep the second photo", "k")
	b.waitJS("compare closed, the second photo kept", `!document.querySelector('#compare[open]') &&
		import('/static/cull.js').then((c) => c.marksOf(`+jsq(second)+`).picked && c.marksOf(`+jsq(portrait)+`).rejected)`)
	if twice := eval[[]string](b, `import('/static/cull.js').then((c) => {
		const seen = new Map(), out = [];
		for (const k of c.keyTable()) for (const s of k.scopes) {
			const at = k.key + ' in ' + s;
			if (seen.has(at)) out.push(at + ': ' + seen.get(at) + ' / ' + k.description);
			seen.set(at, k.description);
		}
		return out;
	})`); len(twice) > 0 {
		t.Errorf("keys with two meanings in one view: %v", twice)
	}

	// A phone, by touch.
	b.run("a phone's screen, by touch", chromedp.EmulateViewport(390, 844, chromedp.EmulateTouch))
	b.run("reload", chromedp.Reload())
	gridReady("the grid on the phone")
	if !eval[bool](b, `matchMedia('(pointer: coarse)').matches`) {
		t.Fatal("the emulated phone does not report a coarse pointer")
	}
	phone := eval[layoutFigures](b, measureLayout)
	t.Logf("390×844: first row at %.0f px, photos %.1f %% of the window, %d columns of %.0f px, background luminance %.3f",
		phone.FirstTop, 100*phone.PhotoShare, phone.Columns, phone.TileWidth, phone.Luminance)
	b.viewShot("layout-06-phone")
	checkLayout(t, "390×844", phone)
	checkWhole(t, b, portrait, ratio[portrait])
	type targets struct {
		N     int
		Small []string
	}
	bars := eval[targets](b, touchTargets)
	b.run("open the filters", chromedp.Click(chromedp.CSS("#filters-toggle")))
	b.waitJS("the filters shown", `document.querySelector('#filter-panel').getClientRects().length > 0 &&
		document.querySelector('#filter-camera').getClientRects().length > 0`)
	if eval[bool](b, `document.documentElement.scrollWidth > innerWidth`) {
		t.Error("390×844: the open filters make the page wider than the window")
	}
	b.viewShot("layout-07-phone-filters")
	filters := eval[targets](b, touchTargets)
	if bars.N < 10 || filters.N <= bars.N {
		t.Errorf("measured %d controls on the bars and %d with the filters open: too few to mean anything", bars.N, filters.N)
	}
	if len(filters.Small) > 0 {
		t.Errorf("390×844 by touch: controls smaller than 44 px: %s", strings.Join(filters.Small, ", "))
	}
}

// checkLayout wants the first row of photos within 200 px of the top, a
// dark background and nothing wider than the window.
func checkLayout(t *testing.T, size string, f layoutFigures) {
	t.Helper()
	if f.FirstTop < 0 || f.FirstTop > 200 {
		t.Errorf("%s: the first row of photos starts at %.0f px, want at most 200", size, f.FirstTop)
	}
	if f.Luminance > 0.05 {
		t.Errorf("%s: the background's luminance is %.3f, want dark (at most 0.05)", size, f.Luminance)
	}
	if f.Overflow {
		t.Errorf("%s: the page is wider than the window", size)
	}
}

// checkWhole wants asset id's tile to show the whole photo in its shape.
func checkWhole(t *testing.T, b *browser, id string, want float64) {
	t.Helper()
	sel := `#grid > li[data-asset="` + id + `"]`
	b.waitJS("the tile of "+id+" drawn", `(`+photoShown+`)(`+jsq(sel)+`) !== null`)
	got := eval[struct{ Ratio, Whole, Width, Height float64 }](b, `(`+photoShown+`)(`+jsq(sel)+`)`)
	t.Logf("%s: %.0f×%.0f px shown, ratio %.3f (the photo's %.3f), %.0f %% of it", id, got.Width, got.Height, got.Ratio, want, 100*got.Whole)
	if got.Ratio < want*0.98 || got.Ratio > want*1.02 || got.Whole < 0.99 {
		t.Errorf("the tile of %s shows %.1f %% of the photo at a ratio of %.3f; the photo's is %.3f", id, 100*got.Whole, got.Ratio, want)
	}
}
