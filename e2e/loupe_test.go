package e2e_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// currentThumb is the asset of the filmstrip's thumbnail marked current,
// when exactly one is and it lies wholly inside the strip as scrolled.
const currentThumb = `(() => {
	const strip = document.querySelector('#filmstrip');
	const cur = [...strip.querySelectorAll('.fthumb:not([hidden])')].filter((b) => b.getAttribute('aria-current') === 'true');
	if (cur.length !== 1) return '';
	const s = strip.getBoundingClientRect(), r = cur[0].getBoundingClientRect();
	return r.left >= s.left - 0.5 && r.right <= s.right + 0.5 ? cur[0].dataset.asset : '';
})()`

// TestFilmstripOfThousands opens the loupe in a project of 3,000 photos:
// the filmstrip holds elements for the thumbnails around the photo shown
// only, however far it goes, and follows it through 100 steps by → and to
// the last photo by End. It logs the frames' lengths as it steps.
func TestFilmstripOfThousands(t *testing.T) {
	t.Parallel()
	const n, steps = 3000, 100
	chrome := chromium(t)
	s, key := gridStack(t, "filmstrip-stack.log")
	project := s.seeded(key, "Season", n)
	ids := s.listIDs(key, project)
	s.photoFiles(append(ids[:steps+20:steps+20], ids[n-20:]...))

	b := newBrowser(t, chrome)
	b.logErrors()
	b.run("a laptop's window", chromedp.EmulateViewport(1280, 800))
	b.signIn(s.url+"/#/projects/"+project+"/photos", key)
	b.waitJS("every photo listed", `document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (3,000)'`)
	b.run("focus the first photo", chromedp.Focus(chromedp.CSS(`#grid li[aria-posinset="1"]`)))
	b.key("open the loupe", kb.Enter)
	b.waitJS("the first photo drawn, marked in the strip", drawn(ids[0])+` && `+currentThumb+` === `+jsq(ids[0]))
	b.waitJS("thumbnails in the strip", `[...document.querySelectorAll('#filmstrip .fthumb:not([hidden]) img')].some((i) => i.complete && i.naturalWidth > 0)`)
	thumbs := `document.querySelectorAll('#filmstrip .fthumb').length`
	if k := eval[int](b, thumbs); k < 10 || k > 60 {
		t.Errorf("the filmstrip holds %d thumbnails of %d photos; it should hold those in sight and a few around", k, n)
	}

	// 100 presses of → as fast as the page takes them: the time the page
	// spends on each, the strip following.
	// 100 presses of →, one a frame, as a held key sends them faster than
	// that: the frames' lengths while the loupe and the strip follow.
	var frames struct{ Median, Worst, Mean float64 }
	frames = eval[struct{ Median, Worst, Mean float64 }](b, fmt.Sprintf(`(async () => {
		const stage = document.querySelector('#loupe-stage');
		const frame = () => new Promise((r) => requestAnimationFrame(r));
		const gaps = [];
		let last = await frame();
		for (let i = 0; i < %d; i++) {
			stage.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true, cancelable: true }));
			const t = await frame();
			gaps.push(t - last);
			last = t;
		}
		const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
		gaps.sort((a, b) => a - b);
		return { median: gaps[gaps.length >> 1], worst: gaps[gaps.length - 1], mean };
	})()`, steps))
	b.waitJS("the photo 100 steps on, marked in the strip", drawn(ids[steps])+` && `+currentThumb+` === `+jsq(ids[steps]))
	if got := b.text("#loupe-pos"); got != fmt.Sprintf("%d of 3,000", steps+1) {
		t.Errorf("the loupe says %q after %d steps", got, steps)
	}
	if k := eval[int](b, thumbs); k > 60 {
		t.Errorf("after %d steps the filmstrip holds %d thumbnails", steps, k)
	}
	b.viewShot("loupe-filmstrip-thousands")

	b.key("the last photo", kb.End)
	b.waitJS("the last photo drawn, marked in the strip", drawn(ids[n-1])+` && `+currentThumb+` === `+jsq(ids[n-1]))
	if k := eval[int](b, thumbs); k > 60 {
		t.Errorf("at the last photo the filmstrip holds %d thumbnails", k)
	}
	b.run("click the thumbnail before it", chromedp.Click(chromedp.CSS(`#filmstrip .fthumb[data-asset="`+ids[n-2]+`"]`)))
	b.waitJS("the photo before the last drawn", drawn(ids[n-2])+` && `+currentThumb+` === `+jsq(ids[n-2]))
	t.Logf("%d steps through %d photos, one a frame: frames of %.1f ms median, %.1f ms mean, %.1f ms at worst",
		steps, n, frames.Median, frames.Mean, frames.Worst)
}
