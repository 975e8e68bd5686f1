package e2e_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// xmpSidecar is a sidecar as Lightroom writes one: the stars and the
// colour label, nothing else.
func xmpSidecar(rating int, label string) []byte {
	return fmt.Appendf(nil, `<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="Adobe XMP Core 7.0-c000">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:Rating="%d" xmp:Label="%s"/>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>
`, rating, label)
}

// apiBytes reads an API answer's body as it is.
func (s *stack) apiBytes(key, path string) (int, []byte) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return res.StatusCode, body
}

// TestUploadSidecarsInABrowser chooses three photos with their XMP
// sidecars, one named as Lightroom names it (NAME.xmp), one as darktable
// does (NAME.EXT.XMP, in capitals), one the server refuses, beside a
// sidecar of no photo and one too large to send. The page names the two it
// skips and warns of the refused one with the server's reason; each
// photo's tile shows its sidecar's stars and label without a reload, the
// API has them and gives the sidecar's bytes back, and no file fails.
func TestUploadSidecarsInABrowser(t *testing.T) {
	t.Parallel()
	const green, red = "rgb(47, 163, 107)", "rgb(229, 72, 77)"
	chrome := chromium(t)
	s, key := gridStack(t, "upload-sidecar-stack.log")
	photos := distinctPhotos(t, 3)
	dir := filepath.Dir(photos[0])
	lightroom := strings.TrimSuffix(photos[0], filepath.Ext(photos[0])) + ".xmp"
	darktable := photos[1] + ".XMP"
	refused := strings.TrimSuffix(photos[2], filepath.Ext(photos[2])) + ".xmp"
	orphan := filepath.Join(dir, "ghost.xmp")
	large := filepath.Join(dir, "huge.xmp")
	sidecars := map[string][]byte{lightroom: xmpSidecar(4, "Green"), darktable: xmpSidecar(2, "Red"), orphan: xmpSidecar(5, "Blue"),
		refused: append([]byte(`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "e">]>`), xmpSidecar(1, "Red")...),
		large:   append(xmpSidecar(3, "Purple"), bytes.Repeat([]byte(" "), 1<<20)...)}
	for path, data := range sidecars {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	b := newBrowser(t, chrome)
	b.logErrors()
	b.run("a laptop's screen", chromedp.EmulateViewport(1280, 800))
	project := b.newProject(s.url, key, "Lake, with Lightroom's stars")
	// The page's status line says something for a few seconds: every
	// thing it says is kept, with its kind, to be read afterwards.
	eval[bool](b, `(() => { const st = document.querySelector('#status'); window.statusSaid = [];
		new MutationObserver(() => { if (st.textContent) window.statusSaid.push(st.dataset.kind + ': ' + st.textContent); })
			.observe(st, { childList: true, characterData: true, subtree: true, attributes: true });
		return true; })()`)
	b.run("choose the photos and the sidecars", chromedp.SetUploadFiles(chromedp.CSS("#file-input"),
		[]string{photos[0], lightroom, orphan, photos[1], darktable, photos[2], refused, large}))
	b.waitJS("the sidecars without a photo named as skipped", `(() => { const t = document.querySelector('#skipped').textContent;
		return t.startsWith('Skipped 2 files') && t.includes('ghost.xmp (no photo of that name)') && t.includes('huge.xmp (larger than 1 MiB)'); })()`)
	b.waitJS("a warning of the refused sidecar", `window.statusSaid.some((t) => t.startsWith('warn: XMP sidecar `+filepath.Base(refused)+` not applied: ') && t.includes('DOCTYPE'))`)
	b.viewShot("upload-sidecar-01-warning")
	s.waitReady(key, project, 3)
	b.waitJS("the page to say Searchable 3/3", `document.querySelector('#phase-searchable').textContent === 'Searchable 3/3'`)
	if got := b.text(`button[data-filter="failed"]`); got != "Failed (0)" {
		t.Errorf("the failed filter reads %q", got)
	}
	if said := eval[[]string](b, `[...new Set(window.statusSaid.filter((t) => t.includes('sidecar')))]`); len(said) != 1 {
		t.Errorf("the page tells of sidecars %d times, want once, of the refused one: %q", len(said), said)
	}
	b.viewShot("upload-sidecar-02-panel")
	b.run("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateTouch))
	if wide := eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`); wide {
		t.Error("the upload page is wider than a phone's screen")
	}
	b.viewShot("upload-sidecar-03-phone")
	b.run("back to a laptop's screen", chromedp.EmulateViewport(1280, 800))

	// Each sidecar went to its photo's asset, as it was on disk.
	assets := map[string]string{}
	for path, sidecar := range map[string]string{photos[0]: lightroom, photos[1]: darktable} {
		id, _ := s.asset(filepath.Base(path))
		assets[path] = id.String()
		var code int
		var body []byte
		s.waitFor("the sidecar of "+filepath.Base(path)+" through the API", func() bool {
			code, body = s.apiBytes(key, "/v1/assets/"+id.String()+"/sidecar")
			return code != http.StatusNotFound
		})
		if code != http.StatusOK || !bytes.Equal(body, sidecars[sidecar]) {
			t.Errorf("GET the sidecar of %s: %d, %d bytes, want %s's %d bytes:\n%s",
				filepath.Base(path), code, len(body), filepath.Base(sidecar), len(sidecars[sidecar]), body)
		}
	}
	id, _ := s.asset(filepath.Base(photos[2]))
	if code, body := s.apiBytes(key, "/v1/assets/"+id.String()+"/sidecar"); code != http.StatusNotFound {
		t.Errorf("the refused sidecar was kept: GET answers %d\n%s", code, body)
	}
	if n := s.count(`SELECT count(*) FROM assets WHERE project_id = $1`, project); n != 3 {
		t.Errorf("%d assets in the project, want the 3 photos: a sidecar was uploaded as a photo", n)
	}
	ratings, labels := s.ratings(key, project), s.labels(key, project)
	for path, want := range map[string]struct {
		stars int
		label string
	}{photos[0]: {4, "green"}, photos[1]: {2, "red"}} {
		id := assets[path]
		if r := ratings[id]; r == nil || r.Rating == nil || *r.Rating != want.stars || labels[id] != want.label {
			t.Errorf("the API has %s rated %v, labelled %q; want %d stars, %s", filepath.Base(path), ratings[id], labels[id], want.stars, want.label)
		}
	}

	// The photos as the person sees them, in the same visit.
	b.run("open the photos", chromedp.Click(chromedp.CSS("#tab-photos")))
	tile := func(path string) string { return `#grid li[data-asset="` + assets[path] + `"]` }
	b.waitJS("four stars and a green label on the first photo", `(() => { const li = document.querySelector(`+jsq(tile(photos[0]))+`);
		return !!li && li.dataset.rating === '4' && li.querySelector('.stars').textContent === '★★★★☆'; })() && `+swatch(tile(photos[0]), green))
	b.waitJS("two stars and a red label on the second", `(() => { const li = document.querySelector(`+jsq(tile(photos[1]))+`);
		return !!li && li.dataset.rating === '2' && li.querySelector('.stars').textContent === '★★☆☆☆'; })() && `+swatch(tile(photos[1]), red))
	b.viewShot("upload-sidecar-04-grid")
}
