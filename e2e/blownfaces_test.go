package e2e_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"lightbox/testsupport/testenv"
)

// TestBlownFacesWarnLive uploads a group photo and the same photo 2.5 EV
// over into a project that finds faces, with the page open. The bright
// one's frame keeps its midtones (dark clothes and hair), so ingest does
// not warn it; when its faces are scanned, its tile is warned overexposed
// without a reload, and says why. The photo as taken is not warned.
func TestBlownFacesWarnLive(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	if _, err := exec.LookPath("vips"); err != nil {
		t.Fatal("the vips command is not installed (libvips-tools; make test installs it)")
	}
	faces := testenv.StartFaces(t)
	dir := t.TempDir()
	taken, over := filepath.Join(dir, "group.jpg"), filepath.Join(dir, "group-bright.jpg")
	for _, args := range [][]string{
		{"copy", filepath.Join(testenv.FaceDemo(t), "sample1.jpg"), taken},
		{"colourspace", taken, filepath.Join(dir, "lin.v"), "scrgb"},
		{"linear", filepath.Join(dir, "lin.v"), filepath.Join(dir, "over.v"), "5.657", "0"},
		{"colourspace", filepath.Join(dir, "over.v"), over, "srgb"},
	} {
		if out, err := exec.Command("vips", args...).CombinedOutput(); err != nil {
			t.Fatalf("vips %v: %v\n%s", args, err, out)
		}
	}
	s, key := gridStackWith(t, "blownfaces-stack.log", map[string]string{"FACES_URL": faces.Endpoint(), "FACES_SECRET": faces.Secret})
	var p struct{ ID string }
	if code := s.call("POST", "/v1/projects", key, map[string]any{"title": "Group, bright"}, &p); code != 201 {
		t.Fatalf("create project: %d", code)
	}
	if code := s.call("PATCH", "/v1/projects/"+p.ID, key, map[string]any{"detectFaces": true}, nil); code != 200 {
		t.Fatalf("switch faces on: %d", code)
	}
	b := newBrowser(t, chrome)
	b.logErrors()
	b.run("a laptop's window", chromedp.EmulateViewport(1280, 800))
	b.signIn(s.url+"/#/projects/"+p.ID+"/photos", key)
	b.waitJS("the page live", `document.querySelector('#live')?.dataset.state === 'live'`)
	eval[bool](b, `window.notReloaded = true`)
	takenID, _ := s.upload(key, p.ID, taken)
	overID, _ := s.upload(key, p.ID, over)
	tile := func(id string) string { return `document.querySelector(` + jsq(`#grid li[data-asset="`+id+`"]`) + `)` }
	s.waitFor("both photos' faces scanned", func() bool {
		return s.count(`SELECT count(*) FROM face_scans WHERE project_id = $1 AND face_count > 0`, p.ID) == 2
	})
	b.waitJS("the bright photo warned, with why", tile(overID)+`?.dataset.warnings === 'overexposed' &&
		`+tile(overID)+`.querySelector('.warn-mark')?.title.includes('faces blown')`)
	if w := eval[string](b, tile(takenID)+`?.dataset.warnings ?? 'no tile'`); w != "" {
		t.Errorf("the photo as taken is warned %q", w)
	}
	if !eval[bool](b, `window.notReloaded === true`) {
		t.Error("the page reloaded")
	}
	b.viewShot("blownfaces-grid")
}
