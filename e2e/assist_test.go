package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lightbox/blob"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"
	"github.com/lib/pq"
)

// signals are the measures ingest stores in an asset's quality, with the
// assistant's judgement of them at the default strictness (the API adds
// the reasons).
type signals struct {
	Focus      float64  `json:"focus"`
	MotionBlur float64  `json:"motionBlur"`
	Exposure   float64  `json:"exposure"`
	Detail     float64  `json:"detail"`
	Score      int      `json:"score"`
	Warnings   []string `json:"warnings"`
}

// Photos with known signals: sharp and well exposed, soft everywhere,
// four stops dark, and a frame with nothing in it.
var (
	sharpPhoto   = signals{Focus: 72, MotionBlur: 6, Exposure: 0.1, Detail: 0.42, Score: 88, Warnings: []string{}}
	blurredPhoto = signals{Focus: 9, MotionBlur: 6, Exposure: 0.1, Detail: 0.4, Score: 52, Warnings: []string{"blurry"}}
	darkPhoto    = signals{Focus: 70, MotionBlur: 6, Exposure: -4.2, Detail: 0.3, Score: 45, Warnings: []string{"underexposed"}}
	misfirePhoto = signals{Focus: 40, MotionBlur: 6, Exposure: 0, Detail: 0.002, Score: 1, Warnings: []string{"misfire"}}
)

// setSignals gives assets the signals ingest would have measured, and
// makes them ready to cull.
func (s *stack) setSignals(q signals, ids ...string) {
	s.t.Helper()
	raw, _ := json.Marshal(q)
	if _, err := s.env.DB.Exec(`UPDATE assets SET quality = $2, status = 'ai', error_code = NULL, error_message = NULL WHERE id = ANY($1)`,
		pq.Array(ids), string(raw)); err != nil {
		s.t.Fatal(err)
	}
}

// assistSuggestion is what cull:suggest answers, as far as the test reads it.
type assistSuggestion struct {
	Rejects []struct{ AssetID string }
}

// TestAssistedCulling: tiles warned of blur, darkness or a misfire show
// why, and the warning filter keeps exactly them; the Assist panel counts
// what it would reject as its sliders move (an answer to an older slider
// position never replaces a newer one), applies it as one step that
// Ctrl+Z undoes, and after photos it calls blurry are picked by hand it
// says how it learned to be more lenient, until reset; at a phone's size
// too.
func TestAssistedCulling(t *testing.T) {
	t.Parallel()
	const n = 24
	chrome := chromium(t)
	s, key := gridStack(t, "assist-stack.log")
	project := s.seeded(key, "Rainy wedding", n)
	ids := s.listIDs(key, project)
	s.photoFiles(ids)
	blurred, dark, misfire, sharp := ids[:6], ids[6:8], ids[8:9], ids[9:]
	s.setSignals(blurredPhoto, blurred...)
	s.setSignals(darkPhoto, dark...)
	s.setSignals(misfirePhoto, misfire...)
	s.setSignals(sharpPhoto, sharp...)
	warned := ids[:9]
	tile := func(id string) string { return `#grid li[data-asset="` + id + `"]` }

	var want assistSuggestion
	if code := s.call("POST", "/v1/projects/"+project+"/cull:suggest", key, map[string]any{"keepPerGroup": 0, "mark": "flags"}, &want); code != 200 {
		t.Fatalf("cull:suggest: %d", code)
	}
	if got := rejectIDs(want); got != strings.Join(sorted(warned), ",") {
		t.Fatalf("the API suggests rejecting %s, want the nine warned photos %s", got, strings.Join(sorted(warned), ","))
	}

	b := newBrowser(t, chrome)
	b.logErrors()
	b.run("a laptop's window", chromedp.EmulateViewport(1280, 800))
	b.signIn(s.url+"/#/projects/"+project+"/photos", key)
	b.waitJS("the grid", fmt.Sprintf(`document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (%d)'`, n))
	drawnTiles := func(what string) {
		t.Helper()
		b.waitJS(what, `[...document.querySelectorAll('#grid > li:not([hidden]) img')].filter((i) => i.getBoundingClientRect().top < innerHeight)
			.every((i) => i.complete && i.naturalWidth > 0)`)
	}

	// Each warned tile says why on hover.
	b.waitJS("a blurred tile's warning", `(() => { const w = document.querySelector(`+jsq(tile(blurred[0])+` .warn-mark`)+`);
		return w && w.textContent === '⚠ Blurred' && w.title.includes('focus 9'); })()`)
	if got := eval[string](b, `document.querySelector(`+jsq(tile(sharp[0]))+`).dataset.warnings`); got != "" {
		t.Errorf("a sharp photo's tile warns of %q", got)
	}

	// The buckets as filters.
	b.run("show more filters", chromedp.Click(chromedp.CSS("#filters-toggle")))
	for _, c := range []struct {
		bucket, option string
		ids            []string
	}{{"blurry", "Blurry (6)", blurred}, {"exposure", "Exposure (2)", dark}, {"misfire", "Misfires (1)", misfire},
		{"warned", "Any warning (9)", warned}, {"none", "No warning (15)", sharp}} {
		b.waitJS("the count of "+c.bucket, `document.querySelector('#filter-warning option[value="`+c.bucket+`"]').textContent === `+jsq(c.option))
		b.setField("#filter-warning", c.bucket)
		b.waitView("only the photos warned "+c.bucket, c.ids)
		if c.bucket == "blurry" {
			b.run("fold the filters", chromedp.Click(chromedp.CSS("#filters-toggle")))
			drawnTiles("the blurred photos drawn")
			b.viewShot("assist-01-blurry-filter")
			b.run("show more filters", chromedp.Click(chromedp.CSS("#filters-toggle")))
		}
	}
	b.setField("#filter-warning", "any")
	b.waitView("every photo again", ids)
	b.run("fold the filters", chromedp.Click(chromedp.CSS("#filters-toggle")))

	// The loupe gives the score and the reasons.
	b.run("focus the first photo", chromedp.Focus(chromedp.CSS(tile(blurred[0]))))
	b.key("open the loupe", kb.Enter)
	b.waitJS("the first photo drawn", drawn(blurred[0]))
	b.waitJS("its score and why", `document.querySelector('#loupe-score')?.textContent.startsWith('Score ') &&
		document.querySelector('#loupe-signals [data-signal="blurry"]')?.textContent.includes('soft everywhere')`)
	b.viewShot("assist-02-loupe")
	b.key("close the loupe", kb.Escape)
	b.waitJS("the loupe closed", `!document.querySelector('#loupe[open]')`)

	// A opens the panel, which the keys' help lists.
	b.key("the keys", "?")
	b.waitJS("the keys' help", `document.querySelector('#keys-help[open]') !== null`)
	if help := b.text(`#keys-help section[data-view="grid"]`); !strings.Contains(help, "Assist") {
		t.Errorf("the help does not list the Assist key:\n%s", help)
	}
	b.key("close the help", kb.Escape)
	b.waitJS("the help closed", `!document.querySelector('#keys-help[open]')`)
	b.key("open the assistant", "a")
	ready := func(what string, rejects int) {
		t.Helper()
		b.waitJS(what, fmt.Sprintf(`(() => { const p = document.querySelector('#assist');
			return p && !p.hidden && !p.hasAttribute('data-busy') && document.querySelector('#assist-summary').dataset.rejects === '%d'; })()`, rejects))
	}
	ready("the panel's counts", 9)
	for c, want := range map[string]string{"blurry": "6 photos", "exposure": "2 photos", "misfire": "1 photo", "eyesClosed": "0 photos"} {
		if got := eval[string](b, `document.querySelector('#assist-count-`+c+`').getAttribute('aria-label')`); got != want {
			t.Errorf("the panel counts %s as %q, want %q", c, got, want)
		}
	}
	if got := b.text("#assist-apply"); got != "Apply to 9 photos" {
		t.Errorf("the Apply button reads %q", got)
	}
	drawnTiles("the photos beside the panel drawn")
	b.viewShot("assist-03-panel")

	// The sliders: an answer to an older position that comes late is not
	// shown over a newer one. The answer for blurry at 0.05 is held back
	// until the answer for blurry off has been shown.
	eval[bool](b, `(() => {
		const real = window.fetch;
		window.lateHeld = false;
		window.lateDone = false;
		window.fetch = async (url, init) => {
			const slow = String(url).includes('cull:suggest') && init && String(init.body).includes('"blurry":0.05');
			const res = await real(url, init);
			if (!slow) return res;
			window.lateHeld = true;
			while (document.querySelector('#assist-summary').dataset.rejects !== '3') await new Promise((r) => setTimeout(r, 50));
			await new Promise((r) => setTimeout(r, 300));
			setTimeout(() => { window.lateDone = true; }, 300);
			return res;
		};
		return true;
	})()`)
	b.setRange("#assist-blurry", "0.05")
	b.waitJS("the question for blurry at 0.05 on its way", `window.lateHeld`)
	b.run("blurry off", chromedp.Click(chromedp.CSS("#assist-on-blurry")))
	ready("blurry off: the dark photos and the misfire", 3)
	b.waitJS("the late answer come and gone", `window.lateDone`)
	if got := eval[string](b, `document.querySelector('#assist-summary').dataset.rejects + ' ' + document.querySelector('#assist-count-blurry').dataset.n`); got != "3 0" {
		t.Errorf("after the late answer the panel shows %q rejects and blurry photos, want the newer 3 and 0", got)
	}
	b.run("blurry on", chromedp.Click(chromedp.CSS("#assist-on-blurry")))
	b.setRange("#assist-blurry", "0.5")
	ready("blurry back at 0.5", 9)

	// Apply: the nine rejected, one step; Ctrl+Z undoes it.
	b.run("apply", chromedp.Click(chromedp.CSS("#assist-apply")))
	flags := func(what string, ids []string, flag string) {
		t.Helper()
		b.waitJS(what, fmt.Sprintf(`%s.every((id) => document.querySelector('#grid li[data-asset="' + id + '"]')?.dataset.flag === %s)`,
			jsArray(ids), jsq(flag)))
	}
	flags("the nine shown rejected", warned, "rejected")
	b.waitJS("the panel says what it did", `document.querySelector('#assist-result').dataset.applied === '9' &&
		document.querySelector('#assist-result').textContent.includes('left alone')`)
	s.waitFor("the nine rejected in the API", func() bool {
		got := s.ratings(key, project)
		for _, id := range warned {
			if r := got[id]; r == nil || !r.Rejected {
				return false
			}
		}
		for _, id := range sharp {
			if r := got[id]; r != nil && (r.Rejected || r.Picked) {
				return false
			}
		}
		return true
	})
	drawnTiles("the rejected photos drawn")
	b.viewShot("assist-04-applied")
	b.key("undo", "z", chromedp.ModifierCtrl)
	flags("the nine unflagged again", warned, "")
	s.waitFor("no photo rejected in the API", func() bool {
		for _, r := range s.ratings(key, project) {
			if r != nil && r.Rejected {
				return false
			}
		}
		return true
	})
	b.viewShot("assist-05-undone")

	// Four photos it calls blurry picked by hand: those are left alone, and
	// the blurry criterion learns to be more lenient.
	b.run("select the first photo", chromedp.Click(chromedp.CSS(tile(blurred[0]))))
	for range 3 {
		b.key("select the next", kb.ArrowRight, chromedp.ModifierShift)
	}
	b.waitJS("four selected", `document.querySelector('#selection-status').textContent === '4 selected'`)
	b.key("pick them", "p")
	flags("the four picked", blurred[:4], "picked")
	b.waitJS("the panel's learned adjustment", `(() => {
		const li = document.querySelector('#assist-adjustments li[data-criterion="blurry"]');
		return !!li && li.textContent.includes('kept 4');
	})()`)
	ready("the four left alone", 5)
	if got := b.text("#assist-summary"); !strings.Contains(got, "4 photos you decided by hand are left alone") {
		t.Errorf("the summary reads %q", got)
	}
	eval[bool](b, `(document.querySelector('#assist').scrollTop = 1e6, true)`)
	b.viewShot("assist-06-learned")

	// Reset: what the picks taught is forgotten; they stay left alone.
	b.run("reset", chromedp.Click(chromedp.CSS("#assist-reset")))
	b.waitJS("nothing learned", `!document.querySelector('#assist-adjustments li[data-criterion]') &&
		document.querySelector('#assist-value-blurry').textContent === '0.50'`)
	ready("the four still left alone", 5)

	// A phone: the panel is a drawer under the photos.
	b.run("a phone's screen, by touch", chromedp.EmulateViewport(390, 844, chromedp.EmulateTouch))
	b.run("reload", chromedp.Reload())
	b.waitJS("the grid on the phone", fmt.Sprintf(`document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (%d)'`, n))
	drawnTiles("the phone's grid drawn")
	b.viewShot("assist-07-phone-grid")
	b.run("open the assistant from the bar", chromedp.Click(chromedp.CSS("#open-assist")))
	ready("the panel on the phone", 5)
	if eval[bool](b, `document.documentElement.scrollWidth > innerWidth`) {
		t.Error("390×844: the panel makes the page wider than the window")
	}
	drawnTiles("the photos over the drawer drawn")
	b.viewShot("assist-08-phone-panel")
}

// setRange moves a slider as a pointer would, telling the page at once.
func (b *browser) setRange(sel, value string) {
	b.t.Helper()
	eval[bool](b, `(() => { const el = document.querySelector(`+jsq(sel)+`); el.value = `+jsq(value)+`;
		el.dispatchEvent(new Event('input', { bubbles: true })); return true; })()`)
}

func rejectIDs(sg assistSuggestion) string {
	var ids []string
	for _, r := range sg.Rejects {
		ids = append(ids, r.AssetID)
	}
	return strings.Join(sorted(ids), ",")
}

func sorted(ids []string) []string {
	out := append([]string{}, ids...)
	slices.Sort(out)
	return out
}

// jsArray writes strings as a JavaScript array.
func jsArray(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = jsq(s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// TestAssistJudgesPhotosFromBefore: photos uploaded before the assistant
// could judge them are counted in the Assist panel, and its Judge them
// button reads their signals from their previews on the worker; the
// counts, and the tiles' warnings, follow without a reload.
func TestAssistJudgesPhotosFromBefore(t *testing.T) {
	t.Parallel()
	const n = 4
	chrome := chromium(t)
	s, key := gridStack(t, "assist-judge-stack.log")
	project := s.seeded(key, "Last year's wedding", n)
	ids := s.listIDs(key, project)
	s.photoFiles(ids)
	// The first photo's preview out of focus (σ = long edge / 400): the
	// run must find it blurred.
	preview := filepath.Join(s.dataDir, "blobs", blob.DerivedKey(uuid.MustParse(ids[0]), blob.KindPreview))
	blurred := filepath.Join(t.TempDir(), "blurred.jpg")
	if out, err := exec.Command("vips", "gaussblur", preview, blurred, "5").CombinedOutput(); err != nil {
		t.Fatalf("vips: %v\n%s", err, out)
	}
	data, err := os.ReadFile(blurred)
	if err != nil {
		t.Fatal(err)
	}
	// The preview is a link to a file other tests read: replace it, do
	// not write through it.
	if err := os.Remove(preview); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(preview, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// As they were stored before the signals existed.
	if _, err := s.env.DB.Exec(`UPDATE assets SET status = 'ai', error_code = NULL, error_message = NULL,
		quality = quality - 'focus' - 'motionBlur' - 'exposure' - 'detail' - 'warnings' - 'score' WHERE id = ANY($1)`, pq.Array(ids)); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, chrome)
	b.logErrors()
	b.run("a laptop's window", chromedp.EmulateViewport(1280, 800))
	b.signIn(s.url+"/#/projects/"+project+"/photos", key)
	b.waitJS("the grid", fmt.Sprintf(`document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (%d)'`, n))
	b.key("open the assistant", "a")
	b.waitJS("the photos without signals counted", fmt.Sprintf(`(() => { const s = document.querySelector('#assist-summary');
		return s?.dataset.unjudged === '%d' && s.textContent.includes('%d photos have no signals yet') && !document.querySelector('#assist-judge').hidden; })()`, n, n))
	b.viewShot("assist-09-unjudged")
	b.run("judge them", chromedp.Click(chromedp.CSS("#assist-judge")))
	b.waitJS("every photo judged", `document.querySelector('#assist-summary')?.dataset.unjudged === '0' && document.querySelector('#assist-judge').hidden &&
		document.querySelector('#assist-result').textContent === 'Every photo is judged.'`)

	for _, id := range ids {
		var a struct {
			Quality struct {
				Detail   *float64
				Warnings []string
			}
		}
		s.apiGet(key, "/v1/assets/"+id, &a)
		if a.Quality.Detail == nil || a.Quality.Warnings == nil {
			t.Fatalf("asset %s after the run: %+v", id, a.Quality)
		}
		if id == ids[0] && !slices.Contains(a.Quality.Warnings, "blurry") {
			t.Errorf("the photo with a blurred preview: warnings %v, want blurry", a.Quality.Warnings)
		}
		want := strings.Join(a.Quality.Warnings, " ")
		b.waitJS("the tile warns as the API does", `document.querySelector(`+jsq(`#grid li[data-asset="`+id+`"]`)+`)?.dataset.warnings === `+jsq(want))
	}
	b.viewShot("assist-10-judged")
}
