package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// readyRun is k photos in a row of the grid's first view (upload order)
// that are ready to edit, as ids.
func (s *stack) readyRun(key, project string, k int) []string {
	s.t.Helper()
	ids := s.listIDs(key, project)
	var page struct {
		Items []struct {
			ID    string
			Flags struct{ Status string }
		}
	}
	s.apiGet(key, "/v1/projects/"+project+"/assets?limit=1000", &page)
	ready := map[string]bool{}
	for _, a := range page.Items {
		ready[a.ID] = a.Flags.Status == "cull" || a.Flags.Status == "search" || a.Flags.Status == "ai"
	}
	for i := 0; i+k <= len(ids); i++ {
		run := ids[i : i+k]
		ok := true
		for _, id := range run {
			ok = ok && ready[id]
		}
		if ok {
			return run
		}
	}
	s.t.Fatalf("no %d photos in a row are ready", k)
	return nil
}

// renderable creates a project of n seeded photos whose originals can be
// rendered and exported: each has a corpus photo's files (photoFiles) and
// that original's SHA-256, which renders and exports check before they
// read it.
func (s *stack) renderable(key, title string, n int) string {
	s.t.Helper()
	project := s.seeded(key, title, n)
	ids := s.listIDs(key, project)
	s.photoFiles(ids)
	for _, id := range ids {
		var key string
		if err := s.env.DB.Get(&key, `SELECT blob_key FROM assets WHERE id = $1`, id); err != nil {
			s.t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(s.dataDir, "blobs", key))
		if err != nil {
			s.t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if _, err := s.env.DB.Exec(`UPDATE assets SET checksum_sha256 = $2, byte_size = $3, upload_size = $3 WHERE id = $1`,
			id, hex.EncodeToString(sum[:]), len(data)); err != nil {
			s.t.Fatal(err)
		}
	}
	return project
}

// apiFile is one of an asset's files.
type apiFile struct {
	Kind              string
	URL               string
	WidthPx, HeightPx int
}

func (s *stack) files(key, asset string) map[string]apiFile {
	s.t.Helper()
	var res struct{ Files []apiFile }
	s.apiGet(key, "/v1/assets/"+asset+"/files", &res)
	out := map[string]apiFile{}
	for _, f := range res.Files {
		out[f.Kind] = f
	}
	return out
}

// drag drags the pointer from the middle of the element sel by (dx, dy)
// CSS pixels, in steps, as a mouse does.
func (b *browser) drag(what, sel string, dx, dy float64) {
	b.t.Helper()
	pt := eval[[]float64](b, `(() => { const r = document.querySelector(`+jsq(sel)+`).getBoundingClientRect();
		return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
	x, y := pt[0], pt[1]
	steps := []chromedp.Action[chromedp.Void]{chromedp.MouseEvent("mouseMoved", x, y),
		chromedp.MouseEvent("mousePressed", x, y, chromedp.ButtonLeft, chromedp.ClickCount(1))}
	for i := 1; i <= 8; i++ {
		steps = append(steps, chromedp.MouseEvent("mouseMoved", x+dx*float64(i)/8, y+dy*float64(i)/8, chromedp.ButtonLeft))
	}
	steps = append(steps, chromedp.MouseEvent("mouseReleased", x+dx, y+dy, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	b.run(what, steps...)
}

// meanLight is the mean of the red, green and blue of an image or canvas
// the page can read, 0..255.
func meanLight(sel string) string {
	return `(() => { const el = document.querySelector(` + jsq(sel) + `);
		const c = document.createElement('canvas'); c.width = 64; c.height = 64;
		const x = c.getContext('2d'); x.drawImage(el, 0, 0, 64, 64);
		const d = x.getImageData(0, 0, 64, 64).data; let s = 0;
		for (let i = 0; i < d.length; i += 4) s += d[i] + d[i + 1] + d[i + 2];
		return s / (3 * 64 * 64); })()`
}

// TestEditCropBrightenAndApply edits one photo in the loupe (a square
// crop drawn on the photo and more light), sees the approximation at once
// and the server's render once saved, applies the edit to three selected
// photos as a batch, and sees their tiles change in the grid.
func TestEditCropBrightenAndApply(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key := gridStack(t, "edit-stack.log")
	project := s.renderable(key, "Portraits", 12)
	ids := s.readyRun(key, project, 4)
	// A hidden tile of the grid's pool may still name a photo it showed before.
	tile := func(id string) string { return `#grid li[data-asset="` + id + `"]:not([hidden])` }

	b := newBrowser(t, chrome)
	b.logErrors()
	b.signIn(s.url+"/#/projects/"+project+"/photos", key)
	b.waitJS("the four photos' thumbnails", `[`+jsq(ids[0])+`, `+jsq(ids[1])+`, `+jsq(ids[2])+`, `+jsq(ids[3])+`].every((id) => {
		const i = document.querySelector('#grid li[data-asset="' + id + '"] img'); return i && i.complete && i.naturalWidth > 0; })`)
	plain := map[string]string{}
	for _, id := range ids {
		plain[id] = eval[string](b, `document.querySelector(`+jsq(tile(id)+" img")+`).src`)
	}

	// Select the three after the first, then the first with the focus
	// alone, and edit it.
	b.run("select the second photo", chromedp.Click(chromedp.CSS(tile(ids[1]))))
	b.key("select the third", kb.ArrowRight, chromedp.ModifierShift)
	b.key("select the fourth", kb.ArrowRight, chromedp.ModifierShift)
	for range 3 {
		b.key("back to the first without changing the selection", kb.ArrowLeft, chromedp.ModifierCtrl)
	}
	b.waitJS("three selected, the first with the focus", `document.querySelector('#selection-status').textContent === '3 selected' &&
		document.activeElement.matches(`+jsq(tile(ids[0]))+`)`)
	b.key("edit it", "e")
	b.waitJS("the loupe with the edit panel, ready", `document.querySelector('#loupe[open] img.preview-img')?.dataset.asset === `+jsq(ids[0])+` &&
		document.querySelector('#edit-status')?.textContent.includes('No edits yet')`)
	b.shot("edit-01-panel")
	before := eval[float64](b, meanLight("#loupe img.preview-img"))

	// A square crop, drawn: the aspect, then the top-left corner dragged in.
	b.setField("#edit-ratio", "1:1")
	b.waitJS("the crop drawn on the photo", `!!document.querySelector('#edit-overlay .crop-box:not([hidden])')`)
	full := eval[[]float64](b, `(() => { const r = document.querySelector('#edit-crop-box').getBoundingClientRect(); return [r.width, r.height]; })()`)
	b.drag("drag the crop's top-left corner in", "#edit-crop-box .crop-handle.nw", 60, 60)
	box := eval[[]float64](b, `(() => { const r = document.querySelector('#edit-crop-box').getBoundingClientRect(); return [r.width, r.height]; })()`)
	if box[0] >= full[0]-10 || math.Abs(box[0]-box[1]) > 2 {
		t.Errorf("the crop is %.0f × %.0f after the drag (was %.0f × %.0f): want it smaller and square", box[0], box[1], full[0], full[1])
	}
	b.shot("edit-02-crop")
	b.run("done cropping", chromedp.Click(chromedp.CSS("#edit-crop")))

	// More light, by keys on the slider.
	b.run("focus exposure", chromedp.Focus(chromedp.CSS("#edit-exposure")))
	for range 20 {
		b.key("brighten", kb.ArrowRight)
	}
	b.waitJS("exposure at +1 EV", `document.querySelector('#edit-exposure-value').textContent === '+1.00 EV'`)
	b.waitJS("the approximation drawn", `document.querySelector('#loupe-stage').classList.contains('edit-preview') &&
		document.querySelector('#edit-overlay canvas').width > 0`)
	if approx := eval[float64](b, meanLight("#edit-overlay canvas")); approx < before+10 {
		t.Errorf("the approximate preview is no lighter: %.1f, the photo %.1f", approx, before)
	}
	if ar := eval[float64](b, `(() => { const c = document.querySelector('#edit-overlay canvas'); return c.width / c.height; })()`); math.Abs(ar-1) > 0.02 {
		t.Errorf("the approximate preview is %.3f wide to 1 high, not square", ar)
	}
	b.shot("edit-03-approximate")

	// Saved: the server renders it, and its render replaces the approximation.
	b.run("save", chromedp.Click(chromedp.CSS("#edit-save")))
	b.waitJS("the server's render shown", `(() => { const i = document.querySelector('#loupe img.preview-img');
		return i && i.dataset.asset === `+jsq(ids[0])+` && i.src.includes('edit_preview') && i.complete && i.naturalWidth > 0 &&
			!document.querySelector('#loupe-stage').classList.contains('edit-preview'); })()`)
	render := s.files(key, ids[0])["edit_preview"]
	if render.WidthPx == 0 || math.Abs(float64(render.WidthPx)/float64(render.HeightPx)-1) > 0.01 {
		t.Errorf("the server's render is %d × %d, not square", render.WidthPx, render.HeightPx)
	}
	if after := eval[float64](b, meanLight("#loupe img.preview-img")); after < before+10 {
		t.Errorf("the server's render is no lighter: %.1f, the photo %.1f", after, before)
	}
	b.waitJS("the version listed as rendered", `document.querySelector('#edit-versions li')?.textContent.includes('rendered')`)
	b.shot("edit-04-rendered")

	// Applied to the three others as a batch.
	b.waitJS("the apply button counts them", `document.querySelector('#edit-apply').textContent === 'Apply to the 3 other selected photos'`)
	b.run("apply to the selection", chromedp.Click(chromedp.CSS("#edit-apply")))
	b.waitJS("the batch done", `document.querySelector('#edit-batch .batch')?.dataset.status === 'done'`)
	if text := b.text("#edit-batch-text"); !strings.Contains(text, "Applied to 3 photos") {
		t.Errorf("the batch says %q", text)
	}
	b.shot("edit-05-applied")
	for _, id := range ids[1:] {
		f := s.files(key, id)["edit_preview"]
		if f.WidthPx == 0 || math.Abs(float64(f.WidthPx)/float64(f.HeightPx)-1) > 0.01 {
			t.Errorf("photo %s's render is %d × %d, not square", id, f.WidthPx, f.HeightPx)
		}
	}

	// The grid shows the four edited.
	b.key("close the loupe", kb.Escape)
	b.waitJS("the loupe closed", `!document.querySelector('#loupe[open]')`)
	for _, id := range ids {
		b.waitJS(fmt.Sprintf("photo %s's tile to show its edit", id), `(() => { const li = document.querySelector(`+jsq(tile(id))+`);
			const i = li && li.querySelector('img'); return li.querySelector('.edit-mark').textContent !== '' &&
			i.src.includes('edit_thumbnail') && i.complete && i.naturalWidth > 0 && Math.abs(i.naturalWidth - i.naturalHeight) <= 1; })()`)
		if src := eval[string](b, `document.querySelector(`+jsq(tile(id)+" img")+`).src`); src == plain[id] {
			t.Errorf("photo %s's tile still shows %s", id, src)
		}
	}
	b.viewShot("edit-06-grid")

	// At a phone's width the panel lies under the photo, within the screen.
	b.run("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateTouch))
	// The grid's bar wraps to several lines on a phone and the tiles below
	// the screen are not drawn: bring the grid into view first.
	eval[bool](b, `(document.querySelector('#grid').scrollIntoView(), true)`)
	b.run("focus the first photo", chromedp.Focus(chromedp.CSS(tile(ids[0]))))
	b.key("edit it", "e")
	b.waitJS("the edit panel with the photo's version", `document.querySelector('#edit-status')?.textContent.includes('Saved as version 1')`)
	if wide := eval[bool](b, `(() => { const p = document.querySelector('#loupe .loupe-panels').getBoundingClientRect();
		return p.right > window.innerWidth + 1 || p.left < -1; })()`); wide {
		t.Error("the edit panel is wider than a phone's screen")
	}
	b.viewShot("edit-07-phone")
}
