package e2e_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// apiFaces is GET /v1/assets/{id}/faces as the test reads it.
type apiFaces struct {
	Status string
	Faces  []apiFace
}

type apiFace struct {
	Box        struct{ X, Y, W, H float64 }
	EyesClosed bool
}

// rect is an element's box in CSS px, with an image's own size.
type rect struct {
	Left, Top, Width, Height float64
	NaturalWidth             float64 `json:"nw"`
	NaturalHeight            float64 `json:"nh"`
}

// currentThumb is the asset of the filmstrip's thumbnail marked current,
// when exactly one is and it lies wholly inside the strip as scrolled.
const currentThumb = `(() => {
	const strip = document.querySelector('#filmstrip');
	const cur = [...strip.querySelectorAll('.fthumb:not([hidden])')].filter((b) => b.getAttribute('aria-current') === 'true');
	if (cur.length !== 1) return '';
	const s = strip.getBoundingClientRect(), r = cur[0].getBoundingClientRect();
	return r.left >= s.left - 0.5 && r.right <= s.right + 0.5 ? cur[0].dataset.asset : '';
})()`

// noOverflow is true when nothing on the page or in the loupe is wider
// than the window.
const noOverflow = `document.documentElement.scrollWidth <= innerWidth &&
	document.querySelector('#loupe').scrollWidth <= document.querySelector('#loupe').clientWidth &&
	document.querySelector('#loupe-stage').getBoundingClientRect().right <= innerWidth + 0.5`

// TestLoupeFilmstripFacesAndDetails opens real photos in the loupe, faces
// found by the face sidecar among them: the filmstrip shows the photos in
// the grid's order with the one shown marked, a click on a thumbnail shows
// its photo and → moves the mark along; each face is boxed where the API
// says, a blink marked on its box, the quality signals over the photo, F
// hides and shows the boxes; the Details panel opens on the exposure as
// exiftool reads it, the hashes after. At a laptop's and a phone's size
// nothing is wider than the window.
func TestLoupeFilmstripFacesAndDetails(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	svc := testenv.StartFaces(t)
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(artifacts, "loupe-faces-stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	s := startStack(t, logFile, map[string]string{"FACES_URL": svc.Endpoint(), "FACES_SECRET": svc.Secret})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("face sidecar:\n%s", svc.Log())
		}
	})
	key := s.user("loupe@example.org", false)
	var p struct{ ID string }
	if code := s.call("POST", "/v1/projects", key, map[string]any{"title": "Garden party"}, &p); code != 201 {
		t.Fatalf("create project: %d", code)
	}
	if code := s.call("PATCH", "/v1/projects/"+p.ID, key, map[string]any{"detectFaces": true}, nil); code != 200 {
		t.Fatalf("switch faces on: %d", code)
	}
	corpus, demo := filepath.Join(testenv.Corpus(t), "photos"), testenv.FaceDemo(t)
	// fallenleaf has every exposure fact; sample1 and sample4 are groups
	// of people; storm has none, and is given a blinking face below.
	files := []string{filepath.Join(corpus, "fallenleaf-2560x1600.jpg"), filepath.Join(demo, "sample1.jpg"),
		filepath.Join(corpus, "path-2560x1600.jpg"), filepath.Join(corpus, "storm.jpg"), filepath.Join(demo, "sample4.jpg")}
	ids := make([]string, len(files))
	for i, f := range files {
		ids[i], _ = s.upload(key, p.ID, f)
	}
	leaf, group, dark, storm := ids[0], ids[1], ids[2], ids[3]
	s.waitReady(key, p.ID, len(files))
	s.waitFor("every photo searched for faces", func() bool {
		return s.count(`SELECT count(*) FROM face_scans WHERE project_id = $1`, p.ID) == len(files)
	})
	var found apiFaces
	s.apiGet(key, "/v1/assets/"+group+"/faces", &found)
	if found.Status != "done" || len(found.Faces) < 2 {
		t.Fatalf("the sidecar found %d faces in sample1.jpg (%s); the test needs a group", len(found.Faces), found.Status)
	}
	// A blink, as asset:faces records one, in place of whatever was found.
	open := func(v float64) *float64 { return &v }
	blink := store.Face{X: 0.42, Y: 0.3, W: 0.12, H: 0.2, Score: 0.9, EyeLeft: open(0.05), EyeRight: open(0.07), Sharpness: 150, EyesClosed: true}
	scan := store.FaceScan{AssetID: uuid.MustParse(storm), Model: "test"}
	if err := s.env.DB.QueryRow(`SELECT width_px, height_px FROM asset_files WHERE asset_id = $1 AND kind = 'preview'`, storm).Scan(&scan.Width, &scan.Height); err != nil {
		t.Fatal(err)
	}
	if saved, err := s.env.Store.SaveFaces(context.Background(), scan, []store.Face{blink}); err != nil || saved == nil {
		t.Fatalf("save the blink: %v", err)
	}

	b := newBrowser(t, chrome)
	b.logErrors()
	b.run("a laptop's window", chromedp.EmulateViewport(1280, 800))
	b.signIn(s.url+"/#/projects/"+p.ID+"/photos", key)
	b.waitJS("the grid", `document.querySelector('#tab-body [data-filter=all]')?.textContent === 'All (5)'`)
	view := eval[[]string](b, `import('/static/cull.js').then((c) => c.viewIds())`)
	if strings.Join(view, " ") != strings.Join(ids, " ") {
		t.Fatalf("the grid shows %v, want the upload order %v", view, ids)
	}
	b.run("focus the first photo", chromedp.Focus(chromedp.CSS(`#grid li[aria-posinset="1"]`)))
	b.key("open the loupe", kb.Enter)
	b.waitJS("the first photo drawn", drawn(leaf))

	// The filmstrip: every photo, in the grid's order, the first marked,
	// each with its thumbnail.
	b.waitJS("the filmstrip's thumbnails", `[...document.querySelectorAll('#filmstrip .fthumb:not([hidden]) img')].filter((i) => i.complete && i.naturalWidth > 0).length === 5`)
	strip := eval[[]string](b, `[...document.querySelectorAll('#filmstrip .fthumb:not([hidden])')]
		.sort((a, b) => a.getBoundingClientRect().left - b.getBoundingClientRect().left).map((b) => b.dataset.asset)`)
	if strings.Join(strip, " ") != strings.Join(ids, " ") {
		t.Errorf("the filmstrip shows %v, want %v", strip, ids)
	}
	if got := eval[string](b, currentThumb); got != leaf {
		t.Errorf("the filmstrip marks %q, want the photo shown, %s", got, leaf)
	}
	b.key("pick the first", "p")
	b.waitJS("its thumbnail flagged", `document.querySelector(`+jsq(`#filmstrip .fthumb[data-asset="`+leaf+`"]`)+`).dataset.flag === 'picked'`)

	// A click on a thumbnail shows its photo; → moves on, and the mark
	// follows.
	b.run("click the third thumbnail", chromedp.Click(chromedp.CSS(`#filmstrip .fthumb[data-asset="`+dark+`"]`)))
	b.waitJS("the third photo drawn", drawn(dark)+` && `+currentThumb+` === `+jsq(dark))
	if got := b.text("#loupe-pos"); got != "3 of 5" {
		t.Errorf("the loupe says %q, want 3 of 5", got)
	}
	b.key("next", kb.ArrowRight)
	b.waitJS("the fourth photo drawn, marked in the strip", drawn(storm)+` && `+currentThumb+` === `+jsq(storm))

	// storm: the blink boxed and named, and its signals over the photo.
	var q struct {
		Quality struct{ Warnings []string }
	}
	s.apiGet(key, "/v1/assets/"+storm, &q)
	b.waitJS("the blink boxed", `document.querySelector('#loupe-faces').dataset.asset === `+jsq(storm)+` &&
		document.querySelector('#loupe-faces .face-box[data-eyes="closed"] .face-label')?.textContent.includes('Eyes closed')`)
	b.waitJS("the signals line", `document.querySelector('#loupe-signals').dataset.facts === `+jsq(storm)+` &&
		document.querySelector('#loupe-signals').textContent.includes('Eyes closed: 1 of 1')`)
	checkWarnings(t, "storm", q.Quality.Warnings, b.text("#loupe-signals"))
	var drawnBlink apiFaces
	s.apiGet(key, "/v1/assets/"+storm+"/faces", &drawnBlink)
	if len(drawnBlink.Faces) != 1 || drawnBlink.Faces[0].Box.X != blink.X || !drawnBlink.Faces[0].EyesClosed {
		t.Fatalf("the API has storm's faces as %+v", drawnBlink)
	}
	checkBoxes(t, b, drawnBlink)
	b.key("previous", kb.ArrowLeft)
	b.waitJS("the dark photo again", drawn(dark))
	q.Quality.Warnings = nil
	s.apiGet(key, "/v1/assets/"+dark, &q)
	b.waitJS("its signals", `document.querySelector('#loupe-signals').dataset.facts === `+jsq(dark))
	checkWarnings(t, "path", q.Quality.Warnings, b.text("#loupe-signals"))

	// The group: a box on each face the API found, where it says.
	b.run("click the group's thumbnail", chromedp.Click(chromedp.CSS(`#filmstrip .fthumb[data-asset="`+group+`"]`)))
	b.waitJS("the group drawn", drawn(group))
	b.waitJS("its faces boxed", fmt.Sprintf(`document.querySelector('#loupe-faces').dataset.asset === %s &&
		document.querySelectorAll('#loupe-faces .face-box').length === %d`, jsq(group), len(found.Faces)))
	checkBoxes(t, b, found)
	if got := eval[string](b, `document.querySelector('#loupe-signals').textContent`); !strings.Contains(got, fmt.Sprintf("%d faces", len(found.Faces))) {
		t.Errorf("the signals line reads %q, want %d faces", got, len(found.Faces))
	}
	b.viewShot("loupe-filmstrip-1280")
	if !eval[bool](b, noOverflow) {
		t.Errorf("at 1280×800 the page is %v px wide in a window of %v", eval[float64](b, `document.documentElement.scrollWidth`), eval[float64](b, `innerWidth`))
	}
	b.key("hide the face marks", "f")
	b.waitJS("the boxes hidden", `document.querySelector('#loupe-faces').hidden && document.querySelector('#loupe-faces .face-box').getBoundingClientRect().width === 0`)
	b.key("show the face marks", "f")
	b.waitJS("the boxes shown", `!document.querySelector('#loupe-faces').hidden && document.querySelector('#loupe-faces .face-box').getBoundingClientRect().width > 0`)
	b.key("the keys", "?")
	b.waitJS("the keys' help", `document.querySelector('#keys-help[open]') !== null`)
	if help := b.text("#keys-help"); !strings.Contains(help, "Show or hide the face marks") {
		t.Errorf("the help does not name the face marks' key:\n%s", help)
	}
	b.key("close the help", kb.Escape)
	b.waitJS("the help closed", `!document.querySelector('#keys-help[open]') && !!document.querySelector('#loupe[open]')`)

	// The Details panel of the photo with every fact: the exposure first,
	// as exiftool reads fallenleaf (see imaging's corpus cases), the
	// hashes after.
	b.key("back to the first photo", kb.Home)
	b.waitJS("the first photo drawn", drawn(leaf)+` && `+currentThumb+` === `+jsq(leaf))
	b.waitJS("the EXIF line with the capture time", `document.querySelector('#loupe-exif').textContent.includes('2015-10-29 15:44:44')`)
	if got := b.text("#loupe-exif"); !strings.HasPrefix(got, "1/4000 s · f/2 · ISO 100 · 50 mm · EF50mm f/1.8 II · Canon EOS 70D · 2015-10-29 15:44:44") {
		t.Errorf("the EXIF line reads %q", got)
	}
	b.key("the details", "i")
	b.waitJS("the details", `!!document.querySelector('#details[open] #exif dd')`)
	lines := eval[[][2]string](b, `[...document.querySelectorAll('#details dt')].map((dt) => [dt.textContent, dt.nextElementSibling.textContent])`)
	want := [][2]string{{"Shutter", "1/4000 s"}, {"Aperture", "f/2"}, {"ISO", "100"}, {"Focal length", "50 mm"},
		{"Lens", "EF50mm f/1.8 II"}, {"Captured", "2015-10-29 15:44:44"}}
	if len(lines) < len(want) || fmt.Sprint(lines[:len(want)]) != fmt.Sprint(want) {
		t.Errorf("the details begin %q, want %q", lines[:min(len(lines), len(want))], want)
	}
	var a struct {
		ShutterSpeed   string
		Aperture       float64
		ISO            int
		FocalLengthMm  float64
		LensModel      string
		CapturedAt     string
		ChecksumSha256 string
	}
	s.apiGet(key, "/v1/assets/"+leaf, &a)
	if a.ShutterSpeed != "1/4000" || a.Aperture != 2 || a.ISO != 100 || a.FocalLengthMm != 50 || a.LensModel != "EF50mm f/1.8 II" ||
		a.CapturedAt != "2015-10-29T15:44:44Z" {
		t.Errorf("the API gives %+v, not what exiftool reads", a)
	}
	hash := -1
	for i, l := range lines {
		if l[0] == "SHA-256" && l[1] == a.ChecksumSha256 {
			hash = i
		}
	}
	if hash < len(want) {
		t.Errorf("the SHA-256 is line %d of the details, want it after the exposure: %q", hash, lines)
	}
	b.viewShot("loupe-details-1280")
	b.key("close the details", kb.Escape)
	b.waitJS("back in the loupe", `!document.querySelector('#details[open]') && !!document.querySelector('#loupe[open]')`)

	// A phone: the strip follows, nothing is wider than the screen.
	b.run("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateTouch))
	b.run("click the group's thumbnail", chromedp.Click(chromedp.CSS(`#filmstrip .fthumb[data-asset="`+group+`"]`)))
	b.waitJS("the group drawn, marked in the strip", drawn(group)+` && `+currentThumb+` === `+jsq(group)+` &&
		document.querySelectorAll('#loupe-faces .face-box').length > 0`)
	checkBoxes(t, b, found)
	b.viewShot("loupe-filmstrip-390")
	if !eval[bool](b, noOverflow) {
		t.Errorf("at 390×844 the page is %v px wide in a window of %v", eval[float64](b, `document.documentElement.scrollWidth`), eval[float64](b, `innerWidth`))
	}
}

// checkBoxes compares the face boxes drawn in the loupe with the API's:
// each normalised box scaled to the photo as shown (contained in its
// element), within 3 CSS px.
func checkBoxes(t *testing.T, b *browser, want apiFaces) {
	t.Helper()
	b.waitJS("the faces laid over the photo", `(() => {
		const l = document.querySelector('#loupe-faces'), i = document.querySelector('#loupe-stage img.preview-img');
		return !!l && !!i && i.naturalWidth > 0 && l.getBoundingClientRect().width > 0;
	})()`)
	got := eval[struct {
		Img   rect
		Boxes []rect
	}](b, `(() => {
		const r = (e) => { const x = e.getBoundingClientRect(); return { left: x.left, top: x.top, width: x.width, height: x.height, nw: e.naturalWidth || 0, nh: e.naturalHeight || 0 }; };
		return { img: r(document.querySelector('#loupe-stage img.preview-img')), boxes: [...document.querySelectorAll('#loupe-faces .face-box')].map(r) };
	})()`)
	if len(got.Boxes) != len(want.Faces) {
		t.Fatalf("%d face boxes drawn, the API has %d", len(got.Boxes), len(want.Faces))
	}
	// The photo as drawn: object-fit contain inside the img element.
	im := got.Img
	scale := math.Min(im.Width/im.NaturalWidth, im.Height/im.NaturalHeight)
	w, h := im.NaturalWidth*scale, im.NaturalHeight*scale
	x0, y0 := im.Left+(im.Width-w)/2, im.Top+(im.Height-h)/2
	for i, f := range want.Faces {
		g := got.Boxes[i]
		exp := [4]float64{x0 + f.Box.X*w, y0 + f.Box.Y*h, f.Box.W * w, f.Box.H * h}
		if math.Abs(g.Left-exp[0]) > 3 || math.Abs(g.Top-exp[1]) > 3 || math.Abs(g.Width-exp[2]) > 3 || math.Abs(g.Height-exp[3]) > 3 {
			t.Errorf("face %d is drawn at %.1f,%.1f %.1f×%.1f; the API's box on the photo as shown is %.1f,%.1f %.1f×%.1f",
				i, g.Left, g.Top, g.Width, g.Height, exp[0], exp[1], exp[2], exp[3])
		}
	}
}

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
	k := eval[int](b, thumbs)
	if k > 60 {
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
	t.Logf("%d steps through %d photos, one a frame: frames of %.1f ms median, %.1f ms mean, %.1f ms at worst; %d thumbnail elements",
		steps, n, frames.Median, frames.Mean, frames.Worst, k)
}

// warningNames are the words the loupe shows for the API's warnings.
var warningNames = map[string]string{"blurry": "Blurred", "motion_blur": "Motion blur", "underexposed": "Dark",
	"overexposed": "Bright", "misfire": "Misfire", "eyes_closed": "Eyes closed", "face_soft": "Soft face"}

// checkWarnings wants the loupe's signals line to name each warning the
// API gives photo, and no other.
func checkWarnings(t *testing.T, photo string, warnings []string, signals string) {
	t.Helper()
	for code, name := range warningNames {
		if slices.Contains(warnings, code) != strings.Contains(signals, name) {
			t.Errorf("the API warns of %s's %v and its signals read %q", photo, warnings, signals)
		}
	}
}
