package e2e_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"lightbox/store"
)

// TestGridMarksBlinksAndSoftFaces switches a project's faces on in the
// page; with a blink, a soft face and a blown face among its photos, as
// asset:faces records them, the tiles mark them (the blown face as a
// bright photo, with why) and the Faces filter shows them or the others.
func TestGridMarksBlinksAndSoftFaces(t *testing.T) {
	chrome := chromium(t)
	s, key := gridStack(t, "faces-stack.log")
	project := s.seeded(key, "Couple", 6)
	br := newBrowser(t, chrome)
	br.signIn(s.url+"/#/projects/"+project+"/photos", key)
	// Faces are switched on in the page, and the project says so.
	br.moreFilters("switch faces on", "#detect-faces")
	br.waitJS("faces on", `document.querySelector('#detect-faces-note').textContent.includes('searched for faces')`)
	var p struct{ DetectFaces bool }
	if code := s.call("GET", "/v1/projects/"+project, key, nil, &p); code != 200 || !p.DetectFaces {
		t.Fatalf("the project after the switch: %d, detectFaces %v", code, p.DetectFaces)
	}
	var page struct{ Items []struct{ ID string } }
	if code := s.call("GET", "/v1/projects/"+project+"/assets?limit=4", key, nil, &page); code != 200 || len(page.Items) != 4 {
		t.Fatalf("list: %d %+v", code, page)
	}
	open := func(v float64) *float64 { return &v }
	face := store.Face{X: 0.3, Y: 0.2, W: 0.2, H: 0.3, Score: 0.9, EyeLeft: open(0.3), EyeRight: open(0.32), Sharpness: 200}
	blink, soft, blown := face, face, face
	blink.EyeLeft, blink.EyeRight, blink.EyesClosed = open(0.05), open(0.07), true
	soft.Sharpness, soft.OutOfFocus = 20, true
	blown.Clipped = open(0.8)
	for i, f := range []store.Face{blink, soft, face, blown} {
		scan := store.FaceScan{AssetID: uuid.MustParse(page.Items[i].ID), Model: "test", Width: 100, Height: 80}
		if saved, err := s.env.Store.SaveFaces(context.Background(), scan, []store.Face{f}); err != nil || saved == nil {
			t.Fatalf("save faces: %v", err)
		}
	}

	// As asset:faces records them; the page reads them afresh.
	br.run("reload", chromedp.Reload())
	br.waitJS("the blink marked", `document.querySelector(`+jsq(`.ptile[data-asset="`+page.Items[0].ID+`"]`)+`)?.dataset.faces === 'eyes-closed'`)
	// The assistant's warning says it (⚠ Soft face), or the face mark
	// where the warnings do not.
	br.waitJS("the soft face marked", `document.querySelector(`+jsq(`.ptile[data-asset="`+page.Items[1].ID+`"]`)+`)?.textContent.includes('Soft face')`)
	if n := eval[int](br, `[...document.querySelectorAll('.ptile')].filter((t) => /Soft face|Eyes closed|Blink/.test(t.textContent)).length`); n != 2 {
		t.Errorf("%d tiles marked, want the blink and the soft face", n)
	}
	// A well exposed frame whose face is blown is warned bright, and says why.
	blownTile := `document.querySelector(` + jsq(`.ptile[data-asset="`+page.Items[3].ID+`"]`) + `)`
	br.waitJS("the blown face warned", blownTile+`?.dataset.warnings === 'overexposed'`)
	if why := eval[string](br, blownTile+`.querySelector('[title]:not([title=""])')?.title ?? ''`); !strings.Contains(why, "faces blown: 80% of the middle face clipped") {
		t.Errorf("the blown face's warning says %q", why)
	}
	br.viewShot("faces-grid")
	br.setField("#filter-faces", "eyesClosed")
	br.waitView("only the blink", []string{page.Items[0].ID})
	br.setField("#filter-faces", "soft")
	br.waitView("only the soft face", []string{page.Items[1].ID})
	br.setField("#filter-faces", "good")
	br.waitJS("the four others", `import('/static/cull.js').then((c) => c.viewIds().length === 4 && !c.viewIds().includes(`+
		jsq(page.Items[0].ID)+`) && !c.viewIds().includes(`+jsq(page.Items[1].ID)+`))`)
}
