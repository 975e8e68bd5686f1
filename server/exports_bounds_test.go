package server_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"net/http"
	"testing"
	"time"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// smallPhotos are n distinct 64×40 JPEGs of about a kilobyte.
func smallPhotos(t *testing.T, n int) []photo {
	t.Helper()
	out := make([]photo, n)
	for i := range out {
		img := image.NewRGBA(image.Rect(0, 0, 64, 40))
		for p := range img.Pix {
			img.Pix[p] = byte(p*7 + i*50)
		}
		img.Set(0, 0, color.RGBA{byte(i), 0, 0, 255})
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
			t.Fatal(err)
		}
		out[i] = photo{name: fmt.Sprintf("small-%d.jpg", i), data: buf.Bytes()}
	}
	return out
}

// downloadExport reads a finished export's archive through its signed URL.
func (a *app) downloadExport(key, id string) []byte {
	a.t.Helper()
	r := a.do("GET", "/v1/exports/"+id+"/download", key, nil)
	expect(a.t, r, 200, "")
	dl := decode[struct{ URL string }](a.t, r)
	res, err := http.Get(dl.URL)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return data
}

// TestExportOfTwoSmallPhotosAt8192IsUnder100KBAndCountsInTheQuota: a
// preset's size is a bound, not a target, and sizes past the largest
// preset's are taken as it. Two 9 KB photos asked at 8192×8192 made a
// 20.6 MB export, enlarged; they stay 40×40 crops of themselves. The
// archive counts against the owner's bytes quota while it exists: an
// account it fills takes no more exports.
func TestExportOfTwoSmallPhotosAt8192IsUnder100KBAndCountsInTheQuota(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	r, _ := a.uploadAll(key, project, smallPhotos(t, 2))
	expect(t, r, 200, "")
	a.startWorker()
	stored := a.quotas(key).Bytes.Stored

	e := a.newExport(key, project, map[string]any{"preset": "instagram_carousel",
		"settings": map[string]any{"width": 8192, "height": 8192, "quality": 100}})
	if e.Settings["width"] != 2048.0 || e.Settings["height"] != 2048.0 {
		t.Errorf("settings %v, want the size taken as 2048×2048", e.Settings)
	}
	e = a.waitExport(key, e.ID, "the export to finish", func(e exportReply) bool { return e.Status == "done" || e.Status == "failed" })
	if e.Status != "done" || e.ByteSize == nil {
		t.Fatalf("export %+v", e)
	}
	if *e.ByteSize > 100<<10 {
		t.Errorf("the export of two 64×40 photos at 8192 is %d bytes, over 100 KB", *e.ByteSize)
	}
	data := a.downloadExport(key, e.ID)
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil || len(z.File) != 2 {
		t.Fatalf("zip: %v, %d entries", err, len(z.File))
	}
	for _, f := range z.File {
		rc, _ := f.Open()
		img, _, err := image.Decode(rc)
		rc.Close()
		if err != nil || img.Bounds().Size() != image.Pt(40, 40) {
			t.Errorf("%s: %v, want the photo's largest square, 40×40, not enlarged", f.Name, err)
		}
	}

	q := a.quotas(key)
	if q.Bytes.Exports != *e.ByteSize || q.Bytes.Used != stored+*e.ByteSize {
		t.Errorf("bytes used %d (exports %d), want the originals' %d and the export's %d", q.Bytes.Used, q.Bytes.Exports, stored, *e.ByteSize)
	}
	// An account the export filled takes no more.
	limit := stored + *e.ByteSize
	a.setQuotas("ana@example.org", store.Quotas{Bytes: &limit})
	r = a.do("POST", "/v1/projects/"+project+"/exports", key, map[string]any{"preset": "web"})
	expect(t, r, 403, "quota_exceeded")
	if d := details(t, r); d["quota"] != "bytes" || d["used"] != float64(limit) {
		t.Errorf("details %v", d)
	}
}

// TestOneUsersExportsRunOneAtATime: a user's exports wait, queued, behind
// their running one (EXPORT_USER_RUNNING, 1) and start in the order asked
// for, on a worker with slots to spare; another user's export is not held
// behind them. Unbounded, all of them ran at once on every slot.
func TestOneUsersExportsRunOneAtATime(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ana, bob := a.user("ana@example.org", false), a.user("bob@example.org", false)
	anas, bobs := a.newProject(ana), a.newProject(bob)
	r, _ := a.uploadAll(ana, anas, kites(t, 12))
	expect(t, r, 200, "")
	r, _ = a.uploadAll(bob, bobs, kites(t, 2))
	expect(t, r, 200, "")

	var asked []string
	for range 3 {
		asked = append(asked, a.newExport(ana, anas, map[string]any{"preset": "web"}).ID)
	}
	bobs1 := a.newExport(bob, bobs, map[string]any{"preset": "web"}).ID
	a.startWorker()

	mostAtOnce := 0
	testenv.EventuallyEvery(t, "every export to end", 5*time.Minute, 5*time.Millisecond, func() bool {
		mostAtOnce = max(mostAtOnce, a.count(`SELECT count(*) FROM exports WHERE project_id = $1 AND status = 'running'`, anas))
		return a.count(`SELECT count(*) FROM exports WHERE status IN ('queued', 'running')`) == 0
	})
	if mostAtOnce != 1 {
		t.Errorf("ana had %d exports running at once, want 1", mostAtOnce)
	}
	var order []string
	a.env.DB.Select(&order, `SELECT id::text FROM exports WHERE project_id = $1 AND status = 'done' ORDER BY started_at`, anas)
	if fmt.Sprint(order) != fmt.Sprint(asked) {
		t.Errorf("ana's exports started in the order %v, asked for as %v", order, asked)
	}
	if n := a.count(`SELECT count(*) FROM exports b, exports last WHERE b.id = $1 AND last.id = $2 AND b.started_at < last.started_at`,
		bobs1, asked[2]); n != 1 {
		t.Error("bob's export waited behind all of ana's")
	}
}
