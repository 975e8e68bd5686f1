package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/seed"
	"lightbox/testsupport/testenv"
)

// perfProbe runs in every new document before the page's own scripts: it
// keeps the long tasks (buffered, so none from before it ran are lost),
// the time the photo grid first painted a tile, and marks the benchmark
// sets between its phases.
const perfProbe = `(() => {
  const p = window.__perf = { tasks: [], gridPaint: 0, marks: {}, nodes: 0 };
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) p.tasks.push([e.startTime, e.duration]);
    }).observe({ type: 'longtask', buffered: true });
    p.observed = true;
  } catch (e) { p.observed = false; }
  const look = () => {
    if (document.querySelector('#grid li')) {
      requestAnimationFrame(() => setTimeout(() => { p.gridPaint = performance.now(); }));
      return;
    }
    requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
  p.count = () => { p.nodes = Math.max(p.nodes, document.getElementsByTagName('*').length); return true; };
})()`

// gridFigures is what one opening of a project's pages measured.
type gridFigures struct {
	Observed        bool
	Longest         float64 // ms, the longest task of the whole run
	LongestOpen     float64 // ms, from navigation until every photo is listed
	LongestScroll   float64 // ms, while scrolling the grid and the upload list
	LongestCull     float64 // ms, while filtering, selecting and picking the selected photos
	Over50, Over200 int
	GridPaint       float64 // ms from navigation to the first tile painted
	Loaded          float64 // ms from navigation until the page lists every photo
	Nodes           int     // the most DOM elements seen
}

// BenchmarkGrid100k opens a project of seed.Size photos (100,000 unless
// LIGHTBOX_SCALE_ASSETS says otherwise) in headless Chromium: the photo
// grid, until it lists every photo, then scrolls through the grid a screen
// at a time and far down; filters it to the 5,000 photos with five stars,
// selects them all and picks them (5 requests of 1,000) and scrolls the
// filtered grid; opens the upload list and scrolls it too.
// A PerformanceObserver records the long tasks (over 50 ms, the browser's
// own threshold) all along. The baseline is the same run on a project of
// 100 photos. LIGHTBOX_GRID_CPU_SLOWDOWN=N has Chromium run its pages N
// times slower, as on a slow laptop or phone. Run it with -benchtime=1x.
func BenchmarkGrid100k(b *testing.B) {
	chrome := chromium(b)
	n := seed.Size(b)
	s, key := gridStack(b, "grid-bench-stack.log")
	small := s.seeded(key, "Small shoot", 100)
	big := s.seeded(key, "Season", n)
	const selected = 5000
	s.rateFirst(small, 5)
	s.rateFirst(big, selected)

	br := newBrowser(b, chrome)
	br.run("probe every document", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: perfProbe})
		return err
	}))
	if v := os.Getenv("LIGHTBOX_GRID_CPU_SLOWDOWN"); v != "" {
		rate, err := strconv.ParseFloat(v, 64)
		if err != nil || rate < 1 {
			b.Fatalf("LIGHTBOX_GRID_CPU_SLOWDOWN=%q: want a factor of at least 1", v)
		}
		br.run("slow the CPU down", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetCPUThrottlingRate, emulation.SetCPUThrottlingRateParams{Rate: rate})
			return err
		}))
	}
	br.signIn(s.url, key)
	br.run("the projects page", chromedp.WaitVisible(chromedp.CSS("#new-title")))

	// The probe must see a long task the page makes on purpose, or its
	// silence would mean nothing.
	eval[bool](br, `(() => { setTimeout(() => { const t = performance.now(); while (performance.now() - t < 120); }); return true; })()`)
	br.waitJS("the probe to see a long task", `__perf.tasks.some(([, d]) => d >= 100)`)

	b.ResetTimer()
	for range b.N {
		base := openProject(br, s.url, small, 100, 5, "grid-base")
		got := openProject(br, s.url, big, n, selected, "grid-100k")
		if !got.Observed {
			b.Fatal("this Chromium reports no long tasks")
		}
		for _, m := range []struct {
			prefix string
			f      gridFigures
		}{{"base_", base}, {"", got}} {
			b.ReportMetric(m.f.Longest, m.prefix+"longest_task_ms")
			b.ReportMetric(m.f.LongestOpen, m.prefix+"longest_open_ms")
			b.ReportMetric(m.f.LongestScroll, m.prefix+"longest_scroll_ms")
			b.ReportMetric(m.f.LongestCull, m.prefix+"longest_cull_ms")
			b.ReportMetric(float64(m.f.Over50), m.prefix+"tasks_over_50ms")
			b.ReportMetric(float64(m.f.Over200), m.prefix+"tasks_over_200ms")
			b.ReportMetric(m.f.GridPaint, m.prefix+"first_grid_ms")
			b.ReportMetric(m.f.Loaded, m.prefix+"all_listed_ms")
			b.ReportMetric(float64(m.f.Nodes), m.prefix+"dom_nodes")
		}
		b.Logf("base %+v", base)
		b.Logf("%d photos %+v", n, got)
	}
}

// openProject opens the project's photo grid in a new document, waits
// until it lists all n photos, scrolls the grid, picks the selected
// photos with five stars, scrolls the upload list, and reads the probe's
// figures.
func openProject(br *browser, url, project string, n, selected int, shot string) gridFigures {
	br.t.Helper()
	br.run("open the photos of "+project, chromedp.Navigate("about:blank"),
		chromedp.Navigate(url+"/#/projects/"+project+"/photos"))
	br.waitJS("the first tile painted", `window.__perf && window.__perf.gridPaint > 0`)
	eval[bool](br, `__perf.count()`)
	br.waitJS("every photo listed", fmt.Sprintf(`(() => {
	  const all = document.querySelector('#tab-body [data-filter=all]');
	  if (!all || all.textContent.replace(/\D/g, '') !== '%d') return false;
	  __perf.marks.loaded = performance.now();
	  return __perf.count();
	})()`, n))
	br.viewShot(shot + "-grid")

	// A screen at a time, then far down, letting each step paint.
	const frames = `new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 50))))`
	for range 20 {
		eval[bool](br, `(async () => { window.scrollBy(0, innerHeight); await `+frames+`; return __perf.count(); })()`)
	}
	eval[bool](br, `(async () => { window.scrollTo(0, document.documentElement.scrollHeight); await `+frames+`;
	  await new Promise((r) => setTimeout(r, 500)); return __perf.count(); })()`)
	br.viewShot(shot + "-grid-far")

	// The culling: a filter, a selection of every photo it shows, a pick.
	eval[bool](br, `(__perf.marks.cull = performance.now(), true)`)
	br.setField("#filter-stars", "5")
	br.waitJS("the five-star photos", fmt.Sprintf(`document.querySelector('#select-all').textContent.replace(/\D/g, '') === '%d'`, selected))
	br.key("select them all", "a", chromedp.ModifierCtrl)
	br.waitJS("all selected", fmt.Sprintf(`document.querySelector('#selection-status').textContent.replace(/\D/g, '') === '%d'`, selected))
	br.key("pick them", "p")
	br.waitJS("every pick sent", `import('/static/cull.js').then((c) => c.settled()).then(() => true)`)
	br.waitJS("the picks counted", fmt.Sprintf(`document.querySelector('button[data-flag="picked"]').textContent.replace(/\D/g, '') === '%d'`, selected))
	for range 10 {
		eval[bool](br, `(async () => { window.scrollBy(0, innerHeight); await `+frames+`; return __perf.count(); })()`)
	}
	eval[bool](br, `(__perf.marks.culled = performance.now(), true)`)
	br.viewShot(shot + "-culled")

	br.run("open the upload list", chromedp.Click(chromedp.CSS("#tab-upload")))
	br.waitJS("the upload list", fmt.Sprintf(`(() => {
	  const all = document.querySelector('#tab-body [data-filter=all]');
	  return !!document.querySelector('#file-list .frow:not([hidden])') && !!all && all.textContent.replace(/\D/g, '') === '%d';
	})()`, n))
	for range 20 {
		eval[bool](br, `(async () => { const l = document.querySelector('#file-list'); l.scrollTop += l.clientHeight; await `+frames+`; return __perf.count(); })()`)
	}
	eval[bool](br, `(async () => { document.querySelector('#file-list').scrollTop = 1e9; await `+frames+`;
	  await new Promise((r) => setTimeout(r, 1000)); return __perf.count(); })()`)
	br.viewShot(shot + "-uploads")

	return eval[gridFigures](br, `(() => {
	  const p = __perf;
	  const f = { Observed: p.observed, Longest: 0, LongestOpen: 0, LongestScroll: 0, LongestCull: 0, Over50: 0, Over200: 0,
	    GridPaint: p.gridPaint, Loaded: p.marks.loaded, Nodes: p.nodes };
	  for (const [start, d] of p.tasks) {
	    f.Longest = Math.max(f.Longest, d);
	    if (start < p.marks.loaded) f.LongestOpen = Math.max(f.LongestOpen, d);
	    else if (start >= p.marks.cull && start < p.marks.culled) f.LongestCull = Math.max(f.LongestCull, d);
	    else f.LongestScroll = Math.max(f.LongestScroll, d);
	    if (d > 50) f.Over50++;
	    if (d > 200) f.Over200++;
	  }
	  return f;
	})()`)
}

// TestPhotoGridOfThousands opens a project of 3,000 photos: the grid holds
// only the tiles in view, reaches the last photo when scrolled far down,
// the arrow keys walk the photos in order while tiles are reused under
// them, and its sorts give the API's orders.
func TestPhotoGridOfThousands(t *testing.T) {
	t.Parallel()
	const n = 3000
	chrome := chromium(t)
	s, key := gridStack(t, "grid-stack.log")
	project := s.seeded(key, "Season", n)

	br := newBrowser(t, chrome)
	br.signIn(s.url+"/#/projects/"+project+"/photos", key)
	br.waitJS("every photo listed", `document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (3,000)'`)
	if tiles := eval[int](br, `document.querySelectorAll('#grid > li').length`); tiles == 0 || tiles > 300 {
		t.Errorf("the grid holds %d tiles for %d photos; it should hold only those in view", tiles, n)
	}

	// → from the first photo on, past the screen's end: each press lands
	// on the next photo, though the tiles under it are reused.
	br.run("focus the first photo", chromedp.Focus(chromedp.CSS(`#grid li:first-child`)))
	for want := 2; want <= 80; want++ {
		br.run("press →", chromedp.KeyEvent(kb.ArrowRight))
		br.waitJS("the next photo's tile to have the focus", fmt.Sprintf(
			`document.activeElement.closest('#grid > li')?.getAttribute('aria-posinset') === '%d'`, want))
	}
	br.viewShot("grid-keyboard")

	eval[bool](br, `(window.scrollTo(0, document.documentElement.scrollHeight), true)`)
	br.waitJS("the last photo after scrolling far down", fmt.Sprintf(
		`[...document.querySelectorAll('#grid > li:not([hidden])')].some((li) => li.getAttribute('aria-posinset') === '%d')`, n))
	br.viewShot("grid-far")

	// Sorted by name and by capture time backwards, in runs merged as the
	// page sorts a long list, the photos come in the API's order.
	for _, o := range []struct{ field, value, query string }{
		{"#sort", "filename", "sort=filename"},
		{"#sort", "captured", "sort=capturedAt"},
	} {
		br.setField(o.field, o.value)
		want := s.walkIDs(key, project, o.query)
		br.waitView("the grid in the API's order for "+o.query, want)
	}
	br.run("reverse", chromedp.Click(chromedp.CSS("#sort-order")))
	want := s.walkIDs(key, project, "sort=capturedAt&order=desc")
	br.waitView("the grid in the API's order, newest first", want)
}

// TestUploadCountsWholeWhileTheListLoads opens the upload view of a
// project of 3,000 processed photos (some failed, some not yet embedded)
// with each page of its list held back 1.5 s: its phase counts cover all
// 3,000 while the list still holds fewer (they come from the project's
// stats until the list is whole), and are the same once it is.
func TestUploadCountsWholeWhileTheListLoads(t *testing.T) {
	t.Parallel()
	const n = 3000
	chrome := chromium(t)
	s, key := gridStack(t, "counts-stack.log")
	project := s.seeded(key, "Season", n)

	br := newBrowser(t, chrome)
	br.emulate("hold back the list's pages", holdBackList(s))
	br.signIn(s.url+"/#/projects/"+project+"/upload", key)
	const listed = `document.querySelector('#tab-body [data-filter=all]')?.textContent`
	const counts = `['uploading', 'processing', 'searchable'].map((id) => document.querySelector('#count-' + id)?.textContent).join(' ')`
	br.waitJS("all 3,000 counted while the list is partial", fmt.Sprintf(
		`/^All \([0-9,]+\)$/.test(%s ?? '') && %s !== 'All (3,000)' && /\/3,000$/.test(%s)`, listed, listed, counts))
	early := eval[string](br, counts)
	checkFilters(t, "while listing", eval[string](br, filterCounts))
	br.viewShot("counts-while-listing")
	br.waitJS("the whole list", listed+` === 'All (3,000)'`)
	if whole := eval[string](br, counts); whole != early {
		t.Errorf("counts while listing %q, once listed %q", early, whole)
	}
	checkFilters(t, "once listed", eval[string](br, filterCounts))
	t.Logf("counts: %s", early)
}

// TestDeletedPhotosLeaveTheList deletes a photo of an open project
// through the API: its row goes with the event, and with the event stream
// blocked, with the reload that the stats' disagreement brings.
func TestDeletedPhotosLeaveTheList(t *testing.T) {
	t.Parallel()
	const n = 30
	chrome := chromium(t)
	s, key := gridStack(t, "deleted-stack.log")
	project := s.seeded(key, "Trip", n)
	var page struct{ Items []struct{ ID string } }
	if code := s.call("GET", "/v1/projects/"+project+"/assets?limit=2", key, nil, &page); code != 200 || len(page.Items) != 2 {
		t.Fatalf("list: %d %+v", code, page)
	}
	const listed = `document.querySelector('#tab-body [data-filter=all]')?.textContent`
	del := func(id string) {
		if code := s.call("DELETE", "/v1/assets/"+id, key, nil, nil); code != 204 && code != 200 {
			t.Fatalf("delete %s: %d", id, code)
		}
	}

	live := newBrowser(t, chrome)
	live.signIn(s.url+"/#/projects/"+project+"/upload", key)
	live.waitJS("the list", listed+` === 'All (30)'`)
	del(page.Items[0].ID)
	live.waitJS("the deleted photo gone with its event", listed+` === 'All (29)'`)

	blocked := newBrowser(t, chrome)
	blocked.emulate("block the event stream", &network.Conditions{URLPattern: s.url + "/v1/realtime*", Offline: true})
	blocked.signIn(s.url+"/#/projects/"+project+"/upload", key)
	blocked.waitJS("the list", listed+` === 'All (29)'`)
	del(page.Items[1].ID)
	blocked.waitJS("the deleted photo gone with a reload", listed+` === 'All (28)'`)
}

// TestPhasesWaitForUnfinishedUploads opens a project of processed photos,
// a few of which failed in processing, and two uploads prepared but never
// sent: the upload and processing phases say those two are not finished,
// rather than done, and a failure in processing is not the upload's.
func TestPhasesWaitForUnfinishedUploads(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key := gridStack(t, "phases-stack.log")
	project := s.seeded(key, "Wedding", 300)
	s.prepare(key, project, []map[string]any{{"filename": "late-1.jpg", "byteSize": 1000}, {"filename": "late-2.jpg", "byteSize": 1000}})

	br := newBrowser(t, chrome)
	br.signIn(s.url+"/#/projects/"+project+"/upload", key)
	br.waitJS("the whole list", `document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (302)'`)
	for _, phase := range []string{"uploading", "processing"} {
		br.waitJS("the "+phase+" phase waiting for the two uploads", fmt.Sprintf(
			`document.querySelector('#eta-%s')?.textContent === '2 uploads not finished'`, phase))
	}
}

// TestGroupPhotosShowBeforeTheListIsWhole opens the groups of a project
// whose list is still loading: a group's photos the list does not hold yet
// show their thumbnails all the same.
func TestGroupPhotosShowBeforeTheListIsWhole(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key := gridStack(t, "groups-stack.log")
	project := s.seeded(key, "Party", 3000)
	pid := uuid.MustParse(project)
	// The last two photos: on the list's last page.
	var last []uuid.UUID
	if err := s.env.DB.Select(&last, `SELECT id FROM assets WHERE project_id = $1 AND status IN ('search', 'ai')
		ORDER BY created_at DESC LIMIT 2`, pid); err != nil || len(last) != 2 {
		t.Fatalf("photos: %v %v", last, err)
	}
	// Their thumbnails, as ingest records them (the seed has files for
	// none).
	if _, err := s.env.DB.Exec(`INSERT INTO asset_files (asset_id, kind, blob_key, content_type, byte_size, checksum_sha256)
		SELECT id, 'thumbnail', 'derived/' || id || '/thumbnail.jpg', 'image/jpeg', 1000, checksum_sha256
		FROM assets WHERE id IN ($1, $2)`, last[0], last[1]); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	if _, _, err := s.env.Store.ReplaceClusters(context.Background(), pid, s.env.StartClusterRun(t, pid), []store.NewCluster{{
		Kind: "moment", Title: "Cake", Start: &at, End: &at, Winner: last[0],
		Members: []store.ClusterMember{{AssetID: last[0], Rank: 1, Role: "winner", Signals: json.RawMessage(`{}`)},
			{AssetID: last[1], Rank: 2, Role: "alt", Signals: json.RawMessage(`{}`)}}}}, nil); err != nil {
		t.Fatal(err)
	}

	br := newBrowser(t, chrome)
	br.emulate("hold back the list's pages", holdBackList(s))
	br.signIn(s.url+"/#/projects/"+project+"/groups", key)
	br.waitJS("both photos of the group with their thumbnails",
		`document.querySelectorAll('.cluster[data-kind="moment"] img[src]').length === 2`)
}

// TestDetailsOfferProcessingOnlyWithTheBytes opens the details of two
// failed photos: one that failed in processing can be processed again;
// one whose bytes did not match its checksum at finalize has none to
// process, and is not offered it (the server would refuse).
func TestDetailsOfferProcessingOnlyWithTheBytes(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key := gridStack(t, "details-stack.log")
	var p struct{ ID string }
	if code := s.call("POST", "/v1/projects", key, map[string]any{"title": "Studio"}, &p); code != 201 {
		t.Fatalf("create project: %d", code)
	}
	corpus := testenv.Corpus(t)
	broken, _ := s.upload(key, p.ID, filepath.Join(corpus, "bad", "truncated-progressive.jpg"))
	sent := s.put(key, p.ID, filepath.Join(corpus, "photos", "wood.jpg"))
	sent[0]["checksumSha256"] = strings.Repeat("0", 64)
	s.finalize(key, p.ID, sent)
	mismatched := sent[0]["assetId"].(string)
	s.waitFor("the broken photo failed", func() bool {
		return s.count(`SELECT count(*) FROM assets WHERE id = $1 AND status = 'failed'`, broken) == 1
	})

	br := newBrowser(t, chrome)
	br.signIn(s.url+"/#/projects/"+p.ID+"/photos", key)
	for _, c := range []struct {
		asset string
		offer bool
	}{{broken, true}, {mismatched, false}} {
		br.run("open "+c.asset, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#grid li[data-asset="%s"]`, c.asset))), chromedp.KeyEvent("i"))
		br.waitJS("its details", `document.querySelector('#details[open] #exif') !== null`)
		offered := eval[bool](br, `[...document.querySelectorAll('#details button')].some((b) => b.textContent === 'Process again')`)
		if offered != c.offer {
			t.Errorf("%s: 'Process again' offered %v, want %v", c.asset, offered, c.offer)
		}
		br.run("close the details", chromedp.Click(chromedp.CSS("#details .close")))
	}
}

// holdBackList makes each page of a project's asset list arrive 1.5 s
// late, so a test sees the page while its list is partial.
func holdBackList(s *stack) *network.Conditions {
	return &network.Conditions{URLPattern: s.url + "/v1/projects/*/assets?*", Latency: 1500, DownloadThroughput: -1, UploadThroughput: -1}
}

// emulate applies network conditions to the requests each matches.
func (b *browser) emulate(what string, conds ...*network.Conditions) {
	b.t.Helper()
	b.run(what, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{MatchedNetworkConditions: conds})
		return err
	}))
}

// filterCounts is the text of the upload list's filter buttons.
const filterCounts = `[...document.querySelectorAll('#tab-body [data-filter]')].map((b) => b.textContent).join(' ')`

// checkFilters wants the upload list's filters to count the rows they
// show: none below zero, and the in-progress and failed rows within all
// of them.
func checkFilters(t *testing.T, when, text string) {
	t.Helper()
	m := regexp.MustCompile(`^All \(([0-9,]+)\) In progress \(([0-9,]+)\) Failed \(([0-9,]+)\)$`).FindStringSubmatch(text)
	if m == nil {
		t.Errorf("filters %s: %q", when, text)
		return
	}
	n := func(s string) int { v, _ := strconv.Atoi(strings.ReplaceAll(s, ",", "")); return v }
	if all, active, failed := n(m[1]), n(m[2]), n(m[3]); active+failed > all {
		t.Errorf("filters %s: %q count more rows than the list holds", when, text)
	}
}

// gridStack starts a stack logging to artifacts/e2e/logName, with one
// user, whose API key it returns.
func gridStack(tb testing.TB, logName string) (*stack, string) {
	tb.Helper()
	return gridStackWith(tb, logName, nil)
}

// gridStackWith is gridStack with extra settings (startStack's).
func gridStackWith(tb testing.TB, logName string, extra map[string]string) (*stack, string) {
	tb.Helper()
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		tb.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(artifacts, logName))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { logFile.Close() }) // after the stack has stopped
	s := startStack(tb, logFile, extra)
	return s, s.user("grid@example.org", false)
}

// rateFirst gives the first n photos of a project (in upload order) five
// stars from the grid's user.
func (s *stack) rateFirst(project string, n int) {
	s.t.Helper()
	if _, err := s.env.DB.Exec(`INSERT INTO ratings (asset_id, user_id, rating)
		SELECT a.id, u.id, 5 FROM (SELECT id FROM assets WHERE project_id = $1 ORDER BY created_at, id LIMIT $2) a,
			users u WHERE u.email = 'grid@example.org'`, project, n); err != nil {
		s.t.Fatal(err)
	}
}

// seeded creates a project and fills it with n processed photos.
func (s *stack) seeded(key, title string, n int) string {
	s.t.Helper()
	var p struct{ ID string }
	if code := s.call("POST", "/v1/projects", key, map[string]any{"title": title}, &p); code != 201 {
		s.t.Fatalf("create project: %d", code)
	}
	seed.Fill(s.t, s.env, uuid.MustParse(p.ID), n)
	return p.ID
}
