package e2e_test

import (
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"lightbox/testsupport/testenv"
)

// portraitOf writes the middle of a corpus photo, cut to 2:3 upright, to
// a file named name in a folder of the test's, and returns its path: the
// corpus's photos are all landscape.
func portraitOf(t *testing.T, photo, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.Corpus(t), "photos", photo))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := jpeg.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	w := b.Dy() * 2 / 3
	x := b.Min.X + (b.Dx()-w)/2
	cut := img.(interface {
		SubImage(image.Rectangle) image.Image
	}).SubImage(image.Rect(x, b.Min.Y, x+w, b.Max.Y))
	path := filepath.Join(t.TempDir(), name)
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := jpeg.Encode(out, cut, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return path
}

// shapeOf is a photo file's width over its height.
func shapeOf(t *testing.T, path string) float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := jpeg.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return float64(c.Width) / float64(c.Height)
}

// placed is a photo's box on the page.
type placed struct {
	Asset               string
	X, Y, W, H          float64
	NaturalW, NaturalH  float64
	Name                string
	GridLeft, GridRight float64
}

const placedJS = `(() => { const g = document.querySelector('#grid').getBoundingClientRect();
	return [...document.querySelectorAll('#grid li.photo')].map((li) => {
		const img = li.querySelector('.open img'), r = img.getBoundingClientRect();
		return { asset: li.dataset.asset, x: r.left, y: r.top + scrollY, w: r.width, h: r.height,
			naturalW: img.naturalWidth, naturalH: img.naturalHeight, name: li.querySelector('.name').textContent,
			gridLeft: g.left, gridRight: g.right };
	}); })()`

// allShown is true once every photo of the page has arrived.
const allShown = `(() => { const imgs = [...document.querySelectorAll('#grid li.photo .open img')];
	return imgs.length === %d && !document.querySelector('#grid .pending') && imgs.every((i) => i.complete && i.naturalWidth > 0); })()`

// checkRows checks the photos' boxes at one window size: each in its own
// shape, the photos of a row one height and, but for the last row, as
// wide as the page together; and nothing wider than the window.
func checkRows(t *testing.T, b *browser, size string, shapes map[string]float64) []placed {
	t.Helper()
	boxes := eval[[]placed](b, placedJS)
	if len(boxes) != len(shapes) {
		t.Fatalf("%s: %d photos placed, want %d", size, len(boxes), len(shapes))
	}
	for _, p := range boxes {
		want := shapes[p.Asset]
		if p.W < 1 || p.H < 1 || p.NaturalW < 1 || p.NaturalH < 1 {
			t.Fatalf("%s: %s is drawn %.0f×%.0f from an image of %.0f×%.0f", size, p.Name, p.W, p.H, p.NaturalW, p.NaturalH)
		}
		if got := p.W / p.H; math.Abs(got/want-1) > 0.02 {
			t.Errorf("%s: %s is drawn %.0f×%.0f (%.3f), the photo is %.3f wide to high", size, p.Name, p.W, p.H, got, want)
		}
		if got := p.NaturalW / p.NaturalH; math.Abs(got/want-1) > 0.02 {
			t.Errorf("%s: %s's image is %.0f×%.0f, the photo %.3f wide to high", size, p.Name, p.NaturalW, p.NaturalH, want)
		}
	}
	var rows [][]placed
	for _, p := range boxes {
		if n := len(rows); n > 0 && math.Abs(rows[n-1][0].Y-p.Y) < 1 {
			rows[n-1] = append(rows[n-1], p)
		} else {
			rows = append(rows, []placed{p})
		}
	}
	for i, row := range rows {
		last := row[len(row)-1]
		for _, p := range row {
			if math.Abs(p.H-row[0].H) > 1.5 {
				t.Errorf("%s: row %d holds %s %.1f high and %s %.1f high", size, i+1, row[0].Name, row[0].H, p.Name, p.H)
			}
		}
		if i < len(rows)-1 && (math.Abs(row[0].X-row[0].GridLeft) > 2 || math.Abs(last.X+last.W-last.GridRight) > 2) {
			t.Errorf("%s: row %d runs from %.0f to %.0f, the page from %.0f to %.0f", size, i+1, row[0].X, last.X+last.W, row[0].GridLeft, last.GridRight)
		}
	}
	if over := eval[string](b, `document.documentElement.scrollWidth > innerWidth ? document.documentElement.scrollWidth + ' > ' + innerWidth : ''`); over != "" {
		t.Errorf("%s: the page is wider than the window: %s", size, over)
	}
	t.Logf("%s: %d rows of %d photos", size, len(rows), len(boxes))
	return boxes
}

// swipe drags a finger across the window at height y, from one x to another.
func (b *browser) swipe(what string, y, from, to float64) {
	b.t.Helper()
	b.run(what, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		steps := []input.DispatchTouchEventParams{{Type: input.DispatchTouchEventTypeTouchStart, TouchPoints: []*input.TouchPoint{{X: from, Y: y}}}}
		for i := 1; i <= 8; i++ {
			x := from + (to-from)*float64(i)/8
			steps = append(steps, input.DispatchTouchEventParams{Type: input.DispatchTouchEventTypeTouchMove, TouchPoints: []*input.TouchPoint{{X: x, Y: y}}})
		}
		steps = append(steps, input.DispatchTouchEventParams{Type: input.DispatchTouchEventTypeTouchEnd, TouchPoints: []*input.TouchPoint{}})
		for _, s := range steps {
			if _, err := cdp.Call(ctx, tg, input.DispatchTouchEvent, s); err != nil {
				return err
			}
		}
		return nil
	}))
}

// inView is true once the enlarged view shows photo n (from 1) of total,
// arrived.
func inView(n, total int) string {
	return fmt.Sprintf(`(() => { const v = document.querySelector('#viewer[open]'), i = v?.querySelector('img.shown');
		return !!i && v.querySelector('#viewer-pos').textContent === '%d / %d' && i.complete && i.naturalWidth > 0; })()`, n, total)
}

// TestClientGalleryReadsLikeAPhotographersInABrowser is a client with a
// gallery of watermarked proofs, landscape and portrait: the photos in
// rows in their own shape at a laptop's and a phone's width, numbered
// until the photographer shows file names; a photo enlarged, moved on by
// arrow and by swipe, hearted and commented on there, and closed by
// Escape; a slideshow that moves by itself, pauses on space and ends on
// Escape.
func TestClientGalleryReadsLikeAPhotographersInABrowser(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	dir := filepath.Join(testenv.Corpus(t), "photos")
	tall := portraitOf(t, "wood.jpg", "bride-portrait.jpg")
	files := []string{filepath.Join(dir, "wood.jpg"), tall, filepath.Join(dir, "dune.jpg"), filepath.Join(dir, "storm.jpg"),
		filepath.Join(dir, "kite-2560x1600.jpg")}
	s, key, project, assets := photographedWedding(t, "share-page", files...)
	shapes := map[string]float64{}
	names := make([]string, len(files))
	numbers := make([]string, len(files))
	for i, f := range files {
		shapes[assets[i]] = shapeOf(t, f)
		names[i], numbers[i] = filepath.Base(f), fmt.Sprintf("Photo %d", i+1)
	}
	var g struct{ ID, ShareSlug string }
	if code := s.call("POST", "/v1/projects/"+project+"/galleries", key, map[string]any{
		"title": "Ana & Ben, proofs", "watermark": true, "assetIds": assets}, &g); code != 201 {
		t.Fatalf("create gallery: %d", code)
	}
	n := len(assets)

	b := newBrowser(t, chrome)
	b.run("a laptop's window", chromedp.EmulateViewport(1280, 800))
	b.run("open the gallery", chromedp.Navigate(s.url+"/s/"+g.ShareSlug), chromedp.WaitVisible(chromedp.CSS("#who-name")))
	b.waitJS("every watermarked photo shown", fmt.Sprintf(allShown, n))
	boxes := checkRows(t, b, "1280×800", shapes)
	if got := eval[[]string](b, `[...document.querySelectorAll('#grid li.photo .name')].map((e) => e.textContent)`); !slices.Equal(got, numbers) {
		t.Errorf("the photos are called %v, want %v: the photographer shows no file names", got, numbers)
	}
	if p := boxes[1]; p.H <= p.W {
		t.Errorf("the portrait is drawn %.0f×%.0f", p.W, p.H)
	}
	if n := eval[int](b, `[...document.querySelectorAll('#grid textarea')].filter((t) => t.offsetParent !== null).length`); n != 0 {
		t.Errorf("%d comment boxes are open before anyone asked", n)
	}
	b.shot("share-01-rows")
	b.run("say who is choosing", chromedp.SendKeys(chromedp.CSS("#who-name"), "Ana"+kb.Enter))
	b.waitJS("the visitor named", `document.querySelector('#visitor')?.textContent.includes('Ana') && document.querySelectorAll('#grid li.photo').length === `+fmt.Sprint(n))
	b.waitJS("every photo shown again", fmt.Sprintf(allShown, n))

	// The enlarged view: by click, the arrow keys and Escape.
	b.run("open the first photo", chromedp.Click(chromedp.CSS(`#grid li[data-asset="`+assets[0]+`"] .open`)))
	b.waitJS("the first photo enlarged", inView(1, n))
	b.viewShot("share-02-enlarged")
	b.key("the next photo", kb.ArrowRight)
	b.waitJS("the portrait enlarged", inView(2, n)+` && document.querySelector('#viewer-name').textContent === 'Photo 2'`)
	if cover := eval[bool](b, `(() => { const r = document.querySelector('#viewer img.shown').getBoundingClientRect();
		return r.left <= 0 && r.top <= 60 && r.right >= innerWidth && r.bottom >= innerHeight - 120; })()`); !cover {
		t.Error("the enlarged photo does not take the window")
	}
	b.run("heart it there", chromedp.Click(chromedp.CSS("#viewer-fav")))
	b.waitJS("the heart in the view and on the page", `document.querySelector('#viewer-fav').getAttribute('aria-pressed') === 'true' &&
		document.querySelector('#grid li[data-asset="`+assets[1]+`"] .fav').getAttribute('aria-pressed') === 'true'`)
	b.run("comment on it there", chromedp.Click(chromedp.CSS("#viewer-comment-open")),
		chromedp.SendKeys(chromedp.CSS("#viewer-comment"), "Can we have this one a little warmer?"),
		chromedp.Click(chromedp.CSS("#viewer .comment-send")))
	b.waitJS("the comment sent", `document.querySelector('#viewer .mine li')?.textContent === 'Can we have this one a little warmer?' &&
		document.querySelector('#grid li[data-asset="`+assets[1]+`"] .comments-count').textContent === '1'`)
	b.viewShot("share-03-enlarged-comment")
	b.key("back a photo", kb.ArrowLeft)
	b.waitJS("the first photo again", inView(1, n))
	b.key("close", kb.Escape)
	b.waitJS("the view closed", `!document.querySelector('#viewer[open]')`)

	// The slideshow moves by itself; space pauses it, Escape ends it.
	b.run("start the slideshow", chromedp.Click(chromedp.CSS("#slideshow")))
	b.waitJS("the slideshow on the first photo", inView(1, n)+` && document.querySelector('#viewer').dataset.playing === 'true'`)
	b.waitJS("the slideshow on the second photo, by itself", inView(2, n))
	b.viewShot("share-04-slideshow")
	b.key("pause", " ")
	b.waitJS("paused", `document.querySelector('#viewer').dataset.playing === 'false'`)
	at := eval[string](b, `document.querySelector('#viewer-pos').textContent`)
	b.key("play again", " ")
	b.waitJS("playing again", `document.querySelector('#viewer').dataset.playing === 'true'`)
	b.waitJS("on to the next photo", `document.querySelector('#viewer-pos').textContent !== `+jsq(at))
	b.key("end the slideshow", kb.Escape)
	b.waitJS("the slideshow ended", `!document.querySelector('#viewer[open]')`)

	// The photographer shows the file names.
	if code := s.call("PATCH", "/v1/galleries/"+g.ID, key, map[string]any{"showFileNames": true}, nil); code != 200 {
		t.Fatalf("show file names: %d", code)
	}
	b.run("reload", chromedp.Reload())
	b.waitJS("every photo shown", fmt.Sprintf(allShown, n))
	if got := eval[[]string](b, `[...document.querySelectorAll('#grid li.photo .name')].map((e) => e.textContent)`); !slices.Equal(got, names) {
		t.Errorf("the photos are called %v, want their file names %v", got, names)
	}
	checkRows(t, b, "1280×800 with names", shapes)
	b.shot("share-05-names")

	// A phone: the same rows, narrower; a swipe moves on.
	b.run("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateTouch, chromedp.EmulateMobile))
	b.waitJS("the rows laid out again", `document.querySelector('#grid').getBoundingClientRect().width < 390`)
	checkRows(t, b, "390×844", shapes)
	b.shot("share-06-phone")
	b.run("open the portrait", chromedp.Click(chromedp.CSS(`#grid li[data-asset="`+assets[1]+`"] .open`)))
	b.waitJS("the portrait enlarged", inView(2, n)+` && document.querySelector('#viewer-name').textContent === 'bride-portrait.jpg'`)
	b.viewShot("share-07-phone-enlarged")
	b.swipe("swipe left", 400, 330, 60)
	b.waitJS("the next photo after the swipe", inView(3, n))
	b.swipe("swipe right", 400, 60, 330)
	b.waitJS("the portrait again after a swipe back", inView(2, n))
	b.run("close", chromedp.Click(chromedp.CSS("#viewer-close")))
	b.waitJS("the view closed", `!document.querySelector('#viewer[open]')`)
	if over := eval[string](b, `document.documentElement.scrollWidth > innerWidth ? document.documentElement.scrollWidth + ' > ' + innerWidth : ''`); over != "" {
		t.Errorf("390×844 after the view: the page is wider than the window: %s", over)
	}
}
