package e2e_test

import (
	"os"
	"path/filepath"
	"testing"

	"lightbox/testsupport/testenv"
)

// TestGridShowsThumbnailsBeforePhotosAreReady runs a worker that serves
// only the thumbnails queue, so every ingest waits: photos another client
// uploads while the project's grid is open appear with their thumbnails
// drawn, still marked Processing, and the API says the same.
func TestGridShowsThumbnailsBeforePhotosAreReady(t *testing.T) {
	chrome := chromium(t)
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(artifacts, "thumbnails-stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	s := startStack(t, logFile, map[string]string{"WORKER_QUEUES": "thumbnails"})
	key := s.user("thumbs@example.org", false)
	var p struct{ ID string }
	if code := s.call("POST", "/v1/projects", key, map[string]any{"title": "First look"}, &p); code != 201 {
		t.Fatalf("create project: %d", code)
	}
	br := newBrowser(t, chrome)
	br.signIn(s.url+"/#/projects/"+p.ID+"/photos", key)
	br.waitJS("the empty grid", `document.querySelector('#grid') !== null`)

	dir := testenv.Corpus(t)
	var paths []string
	for _, name := range []string{"wood.jpg", "dune.jpg", "storm.jpg", "blinds.jpg", "kite-2560x1600.jpg", "path-2560x1600.jpg"} {
		paths = append(paths, filepath.Join(dir, "photos", name))
	}
	s.finalize(key, p.ID, s.put(key, p.ID, paths...))

	br.waitJS("six tiles with their thumbnails drawn, all processing", `(() => {
		const tiles = [...document.querySelectorAll('.ptile')];
		return tiles.length === 6 && tiles.every((el) => el.dataset.stage === 'processing' && el.querySelector('img')?.naturalWidth > 0);
	})()`)
	br.viewShot("thumbnails-before-ready")
	var page struct {
		Items []struct {
			Flags struct {
				Readiness string `json:"readiness"`
				Thumbnail bool   `json:"thumbnail"`
				Preview   bool   `json:"preview"`
			} `json:"flags"`
		} `json:"items"`
	}
	if code := s.call("GET", "/v1/projects/"+p.ID+"/assets", key, nil, &page); code != 200 || len(page.Items) != 6 {
		t.Fatalf("list: %d, %d items", code, len(page.Items))
	}
	for i, a := range page.Items {
		if f := a.Flags; f.Readiness != "uploaded" || !f.Thumbnail || f.Preview {
			t.Errorf("asset %d: flags %+v, want uploaded with a thumbnail and no preview", i, f)
		}
	}
}
