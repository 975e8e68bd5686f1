package e2e_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// exiftoolXMP is what exiftool reads of a file's XMP stars, label and
// pick label.
func exiftoolXMP(t *testing.T, path string) map[string]any {
	t.Helper()
	if _, err := exec.LookPath("exiftool"); err != nil {
		t.Fatal("exiftool is not installed (libimage-exiftool-perl; make test installs it)")
	}
	out, err := exec.Command("exiftool", "-j", "-XMP:Rating", "-XMP:Label", "-XMP:PickLabel", path).Output()
	if err != nil {
		t.Fatalf("exiftool %s: %v\n%s", path, err, out)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 1 {
		t.Fatalf("exiftool's JSON: %v\n%s", err, out)
	}
	return rows[0]
}

// TestExportXMPFromTheForm rates and picks a photo in the grid, exports
// the picks at full resolution with XMP sidecars named as darktable names
// them and picks written as a green label, all chosen in the Deliver
// form, and reads the sidecar in the downloaded zip with exiftool: the
// stars given, the pick as a green label and as digiKam's pick label.
func TestExportXMPFromTheForm(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, key := gridStack(t, "export-xmp-stack.log")
	project := s.renderable(key, "Lake portraits", 4)
	id := s.listIDs(key, project)[1]
	var asset struct{ Filename string }
	s.apiGet(key, "/v1/assets/"+id, &asset)
	tile := `#grid li[data-asset="` + id + `"]`

	b := newBrowser(t, chrome)
	b.logErrors()
	b.run("a laptop's screen", chromedp.EmulateViewport(1280, 800))
	b.signIn(s.url+"/#/projects/"+project+"/photos", key)
	b.waitJS("the photo's tile", `!!document.querySelector(`+jsq(tile)+`)`)
	b.run("select the photo", chromedp.Click(chromedp.CSS(tile)))
	b.key("four stars", "4")
	b.key("pick it", "p")
	b.waitJS("four stars and a pick on its tile", `(() => { const li = document.querySelector(`+jsq(tile)+`);
		return li.dataset.rating === '4' && li.dataset.flag === 'picked'; })()`)
	s.waitFor("the stars and the pick in the API", func() bool {
		r := s.ratings(key, project)[id]
		return r != nil && r.Rating != nil && *r.Rating == 4 && r.Picked
	})

	b.run("open Deliver", chromedp.Click(chromedp.CSS("#tab-deliver")))
	b.waitJS("the pick counted", `document.querySelector('label[for="export-source-picks"]')?.textContent === 'The picks (1)'`)
	b.setField("#export-preset", "contact_sheet_pdf")
	if eval[bool](b, `!document.querySelector('#export-xmp-fields').hidden`) {
		t.Error("the XMP settings show for a contact sheet, which takes none")
	}
	b.setField("#export-preset", "web")
	if !eval[bool](b, `document.querySelector('#export-xmp-naming').closest('div').hidden &&
		!document.querySelector('#export-picked').closest('div').hidden`) {
		t.Error("a web export offers sidecar names, or no choice of how picks are written")
	}
	b.setField("#export-preset", "full_res")
	if got := b.text(`label[for="export-xmp"]`); got != "XMP sidecars" {
		t.Errorf("the XMP switch reads %q", got)
	}
	if got := eval[string](b, `document.querySelector('#export-picked').value`); got != "none" {
		t.Errorf("picks are written as %q unless chosen, want none", got)
	}
	if !eval[bool](b, `document.querySelector('#export-picked').disabled && document.querySelector('#export-xmp-naming').disabled`) {
		t.Error("the sidecars' settings can be changed while XMP is off")
	}
	b.run("switch XMP sidecars on", chromedp.Click(chromedp.CSS("#export-xmp")))
	b.setField("#export-xmp-naming", "darktable")
	b.setField("#export-picked", "label:green")
	eval[bool](b, `(document.querySelector('#export-xmp-fields').scrollIntoView({ block: 'center' }), true)`)
	b.viewShot("export-xmp-01-form")
	b.run("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateTouch))
	if wide := eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`); wide {
		t.Error("the Deliver page is wider than a phone's screen")
	}
	eval[bool](b, `(document.querySelector('#export-xmp-fields').scrollIntoView({ block: 'start' }), true)`)
	b.viewShot("export-xmp-02-phone")
	b.run("back to a laptop's screen", chromedp.EmulateViewport(1280, 800))

	b.run("export", chromedp.Click(chromedp.CSS("#export-start")))
	b.waitJS("the export ready with its download link", `(() => { const a = document.querySelector('.export[data-status="done"] a.export-download');
		return !!a && !a.hidden && a.href.startsWith('http'); })()`)
	if got := b.text(".export .export-name"); got != "Full resolution with XMP" {
		t.Errorf("the export is listed as %q", got)
	}
	b.viewShot("export-xmp-03-exported")
	var ex struct {
		Settings struct {
			XMP               bool
			XMPNaming, Picked string
		}
	}
	s.apiGet(key, "/v1/exports/"+eval[string](b, `document.querySelector('.export').dataset.export`), &ex)
	if !ex.Settings.XMP || ex.Settings.XMPNaming != "darktable" || ex.Settings.Picked != "label:green" {
		t.Errorf("the export's settings are %+v", ex.Settings)
	}

	dir, names := downloadExport(t, b)
	sidecar := asset.Filename + ".xmp"
	if want := []string{asset.Filename, sidecar}; !slices.Equal(names, want) {
		t.Fatalf("the zip holds %v, want %v", names, want)
	}
	got := exiftoolXMP(t, filepath.Join(dir, sidecar))
	if got["Rating"] != float64(4) || got["Label"] != "Green" || got["PickLabel"] != float64(3) {
		t.Errorf("exiftool reads the sidecar as %v; want Rating 4, Label Green, PickLabel 3", got)
	}
}

// downloadExport fetches the zip of the Deliver tab's ready export, as its
// download link gives it, writes its entries to a new directory and lists
// them.
func downloadExport(t *testing.T, b *browser) (dir string, names []string) {
	t.Helper()
	res, err := http.Get(eval[string](b, `document.querySelector('.export[data-status="done"] a.export-download').href`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the download link answers %d", res.StatusCode)
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("the download is no zip: %v", err)
	}
	dir = t.TempDir()
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f.Name)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, f.Name)
	}
	return dir, names
}
