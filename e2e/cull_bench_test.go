package e2e_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"lightbox/testsupport/seed"
)

// BenchmarkCull100k culls on a project of seed.Size photos (100,000 unless
// LIGHTBOX_SCALE_ASSETS says otherwise) in headless Chromium, the grid
// filtered to the searchable photos:
//
//   - the loupe: from → pressed to the next photo drawn (its preview
//     loaded and decoded, in a frame), with the next and previous previews
//     loaded ahead; the baseline is the same walk over other photos with
//     loading ahead turned off;
//   - a flag: from P (or U) pressed in the grid to the server's 200 for its
//     cull:applyAction, and whether the tile showed the flag in the frame
//     that followed the key; the baseline is the same request sent by a
//     bare fetch from the page;
//   - another tab: from P (or U) pressed in one tab to the tile changed in
//     a second tab of the project, through asset.updated.
//
// Run it with -benchtime=1x.
func BenchmarkCull100k(b *testing.B) {
	const steps = 40
	chrome := chromium(b)
	n := seed.Size(b)
	s, key := gridStack(b, "cull-bench-stack.log")
	project := s.seeded(key, "Season", n)
	// The first searchable photos, as the filtered grid shows them.
	var first []string
	if err := s.env.DB.Select(&first, `SELECT id FROM assets WHERE project_id = $1 AND status IN ('search', 'ai')
		ORDER BY created_at, id LIMIT $2`, project, 2*steps+2); err != nil {
		b.Fatal(err)
	}
	s.photoFiles(first)

	br := newBrowser(b, chrome)
	br.signIn(s.url+"/#/projects/"+project+"/photos", key)
	br.waitJS("every photo listed", fmt.Sprintf(`document.querySelector('#tab-body [data-filter=all]')?.textContent.replace(/\D/g, '') === '%d'`, n))
	br.moreFilters("only the searchable photos", `button[data-filter="searchable"]`)
	br.waitJS("the first searchable photo first", `document.querySelector('#grid li[aria-posinset="1"]')?.dataset.asset === `+jsq(first[0]))

	other := br.tab()
	other.run("open the project in a second tab", chromedp.Navigate(s.url+"/#/projects/"+project+"/photos"))
	other.waitJS("every photo listed there", fmt.Sprintf(`document.querySelector('#tab-body [data-filter=all]')?.textContent.replace(/\D/g, '') === '%d'`, n))
	other.moreFilters("only the searchable photos there", `button[data-filter="searchable"]`)
	other.waitJS("the first photo's tile there", `!!document.querySelector('#grid li[data-asset="`+first[0]+`"]')`)

	b.ResetTimer()
	for range b.N {
		ahead := loupeWalk(br, first[:steps+1], true)
		cold := loupeWalk(br, first[steps+1:], false)
		flags, same := flagKeys(br, first[0], steps)
		seen := otherTab(br, other, first[0], steps/2)
		bare := bareFlags(br, project, first[1], steps)
		for _, m := range []struct {
			name string
			ms   []float64
		}{{"loupe_ahead", ahead}, {"base_loupe_cold", cold}, {"flag_key_to_200", flags}, {"base_flag_fetch", bare}, {"other_tab", seen}} {
			b.ReportMetric(percentile(m.ms, 50), m.name+"_p50_ms")
			b.ReportMetric(percentile(m.ms, 95), m.name+"_p95_ms")
		}
		b.ReportMetric(float64(same)/float64(steps), "flag_tile_same_frame")
		b.Logf("loupe, loading ahead: %v", ahead)
		b.Logf("loupe, not loading ahead: %v", cold)
		b.Logf("flag key to 200: %v (%d of %d tiles changed in the key's frame)", flags, same, steps)
		b.Logf("bare fetch: %v", bare)
		b.Logf("other tab: %v", seen)
	}
}

// loupeWalk opens the loupe on ids[0] and presses → for each next one,
// timing each from the key to its photo drawn.
func loupeWalk(br *browser, ids []string, ahead bool) []float64 {
	br.t.Helper()
	eval[bool](br, fmt.Sprintf(`import('/static/cull.js').then((c) => { c.setSetting('preload', %v); c.openLoupe(%s); return true; })`, ahead, jsq(ids[0])))
	br.waitJS("the loupe's first photo", drawn(ids[0]))
	var out []float64
	for i := 1; i < len(ids); i++ {
		if ahead {
			// As a person looks at a photo, the next one loads.
			br.waitJS("the next preview loaded ahead", `performance.getEntriesByType('resource').some((e) =>
				e.name.includes('derived/`+ids[i]+`/preview.jpg') && e.responseEnd > 0)`)
		}
		eval[bool](br, `(() => {
			const m = window.__loupe = { ms: 0 };
			addEventListener('keydown', (e) => {
				const look = () => {
					const i = document.querySelector('#loupe[open] .loupe-stage img.preview-img');
					if (i && i.dataset.asset === `+jsq(ids[i])+` && i.complete && i.naturalWidth > 0) m.ms = Math.max(0.01, performance.now() - e.timeStamp);
					else requestAnimationFrame(look);
				};
				requestAnimationFrame(look);
			}, { capture: true, once: true });
			return true;
		})()`)
		br.key("next", kb.ArrowRight)
		br.waitJS("the next photo drawn", `window.__loupe.ms > 0`)
		out = append(out, eval[float64](br, `window.__loupe.ms`))
	}
	br.key("close the loupe", kb.Escape)
	br.waitJS("the loupe closed", `!document.querySelector('#loupe[open]')`)
	return out
}

// flagKeys presses P and U in turn on the grid's tile of id, the first
// photo of the view, timing each
// from the key to the answer of its cull:applyAction, and counts the
// presses whose tile changed in the next frame.
func flagKeys(br *browser, id string, steps int) ([]float64, int) {
	br.t.Helper()
	eval[bool](br, `import('/static/cull.js').then((c) => { c.setSetting('advance', false); return true; })`)
	br.key("to the first photo", kb.Home)
	br.waitJS("the tile focused", `document.activeElement.dataset.asset === `+jsq(id))
	var out []float64
	same := 0
	for i := range steps {
		k, want := "p", "picked"
		if i%2 == 1 {
			k, want = "u", ""
		}
		eval[bool](br, `(() => {
			const m = window.__flag = { ms: 0, same: null, status: 0 };
			addEventListener('keydown', (e) => {
				const tile = document.activeElement;
				requestAnimationFrame(() => { m.same = tile.dataset.flag === `+jsq(want)+`; });
				const po = new PerformanceObserver((list) => {
					for (const r of list.getEntries()) {
						if (!r.name.includes('cull:applyAction') || r.startTime < e.timeStamp) continue;
						m.ms = Math.max(0.01, r.responseEnd - e.timeStamp);
						m.status = r.responseStatus;
						po.disconnect();
					}
				});
				po.observe({ type: 'resource' });
			}, { capture: true, once: true });
			return true;
		})()`)
		br.key("flag", k)
		br.waitJS("the flag's answer", `window.__flag.ms > 0 && window.__flag.same !== null`)
		if st := eval[int](br, `window.__flag.status`); st != 200 {
			br.t.Fatalf("cull:applyAction answered %d", st)
		}
		out = append(out, eval[float64](br, `window.__flag.ms`))
		if eval[bool](br, `window.__flag.same`) {
			same++
		}
	}
	br.waitJS("every flag sent", `import('/static/cull.js').then((c) => c.settled()).then(() => true)`)
	return out, same
}

// otherTab presses P and U in turn on the first tab's focused tile of id
// and times each, in wall-clock time both tabs share, from the key to the
// tile of id marked in the other tab's page.
func otherTab(br, other *browser, id string, steps int) []float64 {
	br.t.Helper()
	var out []float64
	for i := range steps {
		k, want := "p", "picked"
		if i%2 == 1 {
			k, want = "u", ""
		}
		// A mutation observer, not frames: a tab in the background draws none.
		eval[bool](other, `(() => {
			const m = window.__seen = { at: 0 };
			const look = () => {
				const t = document.querySelector('#grid li[data-asset="`+id+`"]');
				if (m.at || !t || t.dataset.flag !== `+jsq(want)+`) return;
				m.at = performance.timeOrigin + performance.now();
				mo.disconnect();
			};
			const mo = new MutationObserver(look);
			mo.observe(document.querySelector('#grid'), { attributes: true, subtree: true, attributeFilter: ['data-flag'] });
			look();
			return true;
		})()`)
		eval[bool](br, `(() => {
			window.__sent = { at: 0 };
			addEventListener('keydown', (e) => { window.__sent.at = performance.timeOrigin + e.timeStamp; }, { capture: true, once: true });
			return true;
		})()`)
		br.key("flag", k)
		other.waitJS("the flag in the other tab", `window.__seen.at > 0`)
		out = append(out, eval[float64](other, `window.__seen.at`)-eval[float64](br, `window.__sent.at`))
	}
	br.waitJS("every flag sent", `import('/static/cull.js').then((c) => c.settled()).then(() => true)`)
	return out
}

// bareFlags sends the same request from the page with fetch alone.
func bareFlags(br *browser, project, id string, steps int) []float64 {
	br.t.Helper()
	return eval[[]float64](br, fmt.Sprintf(`(async () => {
		const out = [];
		for (let i = 0; i < %d; i++) {
			const t = performance.now();
			const r = await fetch('/v1/projects/%s/cull:applyAction', { method: 'POST', headers: { 'Content-Type': 'application/json' },
				body: JSON.stringify({ actions: [{ assetId: %s, picked: i %% 2 === 0 }] }) });
			await r.text();
			if (r.status !== 200) throw new Error('status ' + r.status);
			out.push(performance.now() - t);
		}
		return out;
	})()`, steps, project, jsq(id)))
}

// percentile is the q-th percentile of xs, nearest rank.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(float64(len(s))*q/100+0.5) - 1
	return s[max(0, min(len(s)-1, i))]
}
