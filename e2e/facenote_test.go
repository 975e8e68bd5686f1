package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestFacesNoteFollowsTheScans opens a project that looks for faces while
// its face provider holds every scan, then lets the scans finish: the note
// beside the Find faces switch counts them as they arrive, without a
// reload.
func TestFacesNoteFollowsTheScans(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	// A face provider on loopback that finds no face, once let go.
	release := make(chan struct{})
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var magic string
		var width, height int
		if _, err := fmt.Fscan(bufio.NewReader(r.Body), &magic, &width, &height); err != nil || magic != "P6" {
			http.Error(w, `{"code":"bad_image","message":"not a PPM"}`, http.StatusBadRequest)
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"width": width, "height": height, "faces": []any{}, "model": "none-found"})
	}))
	t.Cleanup(provider.Close)
	letGo := func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}
	t.Cleanup(letGo) // before the provider closes: Close waits for its requests
	s, key := gridStackWith(t, "facenote-stack.log", map[string]string{"FACES_URL": provider.URL + "/v1/faces"})
	project := s.seeded(key, "Faces, live", 5)
	s.photoFiles(s.listIDs(key, project))
	processed := s.count(`SELECT count(*) FROM assets WHERE project_id = $1 AND status IN ('cull', 'search', 'ai')`, project)
	if code := s.call("PATCH", "/v1/projects/"+project, key, map[string]any{"detectFaces": true}, nil); code != 200 {
		t.Fatalf("switch faces on: %d", code)
	}

	b := newBrowser(t, chrome)
	b.logErrors()
	b.signIn(s.url+"/#/projects/"+project+"/upload", key)
	b.waitJS("none searched yet", fmt.Sprintf(`document.querySelector('#detect-faces-note')?.textContent === '0 of %d photos searched for faces…'`, processed))
	b.waitJS("the page live", `document.querySelector('#live')?.dataset.state === 'live'`)
	eval[bool](b, `window.notReloaded = true`)
	b.shot("facenote-01-waiting")
	letGo()
	b.waitJS("every photo searched", fmt.Sprintf(`document.querySelector('#detect-faces-note').textContent === 'All %d photos searched for faces.'`, processed))
	b.shot("facenote-02-done")
	if n := s.count(`SELECT count(*) FROM face_scans WHERE project_id = $1`, project); n != processed {
		t.Errorf("%d photos scanned, want %d", n, processed)
	}
	if !eval[bool](b, `window.notReloaded === true`) {
		t.Error("the page was reloaded on the way")
	}
}
