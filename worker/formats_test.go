package worker_test

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"lightbox/testsupport/testenv"
)

// formatsWant is what each file of the shared formats/ directory must give
// through a running worker: its displayed size and camera, or the code it
// fails with on its first attempt.
var formatsWant = map[string]struct {
	width, height int
	make, code    string
	camera        string // named in the error of a raw that fails
}{
	"heic/iphone8plus-grid-orientation6-p3.heic":            {width: 3024, height: 4032, make: "Apple"},
	"heic/iphone13pro-portrait-depthmap-p3.heic":            {width: 4032, height: 3024, make: "Apple"},
	"heic/xiaomi-m2012k11ag-android-grid.heic":              {width: 2592, height: 1944, make: "Xiaomi"},
	"heic/samsung-s24ultra-200mp-orientation6-gainmap.heic": {code: "too_many_pixels"},
	"heic/sony-a7siii-camera-10bit.hif":                     {width: 4240, height: 2832, make: "SONY"},
	"heic/synthetic-rgba-alpha-128x128.heif":                {width: 128, height: 128},
	"avif/pixel4a-paris-icc-exif-xmp.avif":                  {width: 403, height: 302, make: "Google"},
	"avif/cosmos-10bit-444-p3-pq-hdr.avif":                  {width: 1024, height: 428},
	"avif/sofa-grid1x5-420.avif":                            {width: 1024, height: 770},
	"jxl/bicycles-codestream.jxl":                           {width: 1024, height: 631},
	"jxl/isobmff-container.jxl":                             {width: 640, height: 416},
	"icc/iphone13mini-displayp3-gainmap.jpg":                {width: 384, height: 512, make: "Apple"},
	"icc/cmyk-swop-icc.jpg":                                 {width: 1080, height: 1080},
	"raw/canon550d-magiclantern-14bit-uncompressed.dng":     {width: 1734, height: 1156, make: "Canon"},
	"raw/canon-eos-d30.crw":                                 {width: 2176, height: 1448, make: "Canon"},
	"raw/stubs/canon-350d-stub.cr2":                         {code: "corrupt_image", camera: "Canon EOS 350D"},
	"raw/stubs/canon-m50-stub.cr3":                          {code: "corrupt_image", camera: "Canon EOS M50"},
	"raw/stubs/fuji-s5pro-stub.raf":                         {code: "corrupt_image", camera: "FUJIFILM"},
	"raw/stubs/nikon-d70-stub.nef":                          {code: "corrupt_image", camera: "NIKON D70"},
	"raw/stubs/panasonic-lx3-stub.rw2":                      {code: "corrupt_image", camera: "DMC-LX3"},
}

func TestEveryFormatThroughARunningWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1s", "WORKER_CONCURRENCY": "2"})
	project := h.project()
	dir := testenv.Formats(t)
	ids := map[string]uuid.UUID{}
	for name := range formatsWant {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = h.finalize(project, filepath.Base(name), data)
	}
	h.run()
	testenv.Eventually(h.t, "every file to finish", patience, func() bool {
		return h.count(`SELECT count(*) FROM assets WHERE status IN ('uploaded', 'cull', 'search')`) == 0 &&
			h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:ingest' AND status IN ('queued', 'running')`) == 0
	})
	for name, want := range formatsWant {
		r := h.asset(ids[name])
		if want.code != "" {
			if r.Status != "failed" || deref(r.Code) != want.code || r.Attempt != 1 {
				t.Errorf("%s: status %s code %s attempt %d, want failed %s on the first attempt", name, r.Status, deref(r.Code), r.Attempt, want.code)
			}
			var failed struct {
				Message string `db:"message"`
				Camera  string `db:"camera"`
			}
			h.env.DB.Get(&failed, `SELECT coalesce(error_message, '') AS message,
				concat_ws(' ', camera_make, camera_model) AS camera FROM assets WHERE id = $1`, ids[name])
			if want.camera != "" && !strings.Contains(failed.Message, want.camera) {
				t.Errorf("%s: error %q does not name the camera (%s)", name, failed.Message, want.camera)
			}
			if want.camera != "" && !strings.Contains(failed.Camera, want.camera) {
				t.Errorf("%s: camera recorded as %q, want %s", name, failed.Camera, want.camera)
			}
			continue
		}
		if r.Status != "ai" || r.JobStatus != "done" || r.Width == nil {
			t.Errorf("%s: status %s job %s code %s, want ai and done", name, r.Status, r.JobStatus, deref(r.Code))
			continue
		}
		if *r.Width != want.width || *r.Height != want.height {
			t.Errorf("%s: %d×%d, want %d×%d", name, *r.Width, *r.Height, want.width, want.height)
		}
		if deref(r.Make) != want.make && !(want.make == "" && r.Make == nil) {
			t.Errorf("%s: camera make %s, want %q", name, deref(r.Make), want.make)
		}
		for _, kind := range []string{"thumbnail", "preview"} {
			img := h.derived(ids[name], kind)
			b := img.Bounds()
			if (b.Dx() > b.Dy()) != (want.width > want.height) && b.Dx() != b.Dy() {
				t.Errorf("%s: %s is %v, not the shape of %d×%d", name, kind, b.Size(), want.width, want.height)
			}
		}
	}
}

// derived reads a derived JPEG from the blob store and checks that it is
// plain sRGB: a JPEG with no colour profile left in it.
func (h *harness) derived(asset uuid.UUID, kind string) image.Image {
	h.t.Helper()
	var key string
	if err := h.env.DB.Get(&key, `SELECT blob_key FROM asset_files WHERE asset_id = $1 AND kind = $2`, asset, kind); err != nil {
		h.t.Fatalf("%s of %s: %v", kind, asset, err)
	}
	f, _, err := h.blobs.Open(context.Background(), key)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		h.t.Fatal(err)
	}
	if bytes.Contains(data, []byte("ICC_PROFILE")) {
		h.t.Errorf("%s of %s keeps a colour profile", kind, asset)
	}
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		h.t.Fatalf("%s of %s is not a JPEG: %v", kind, asset, err)
	}
	return img
}

// TestHostileExifThroughARunningWorker ingests a JPEG whose EXIF directories
// point at each other: each is processed with the problem noted, and the
// worker's goroutines and heap come back to where they were.
func TestHostileExifThroughARunningWorker(t *testing.T) {
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1h", "WORKER_CONCURRENCY": "2"})
	project := h.project()
	data, err := os.ReadFile(filepath.Join(testenv.Hostile(t), "exif-ifd-cycle.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	h.run()
	warm := h.finalize(project, "warm-up.jpg", readCorpus(t, "odd/orientation-1.jpg"))
	testenv.Eventually(h.t, "the warm-up photo", patience, func() bool { return h.asset(warm).JobStatus == "done" })
	goroutines, heap := testenv.Settle()

	var ids []uuid.UUID
	for range 5 {
		ids = append(ids, h.finalize(project, "exif-ifd-cycle.jpg", append([]byte(nil), data...)))
		data = append(data, 0) // a different checksum, so none is a duplicate
	}
	testenv.Eventually(h.t, "the hostile files", patience, func() bool {
		return h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:ingest' AND status IN ('queued', 'running')`) == 0
	})
	for _, id := range ids {
		if r := h.asset(id); r.JobStatus != "done" || r.Warning == nil {
			t.Errorf("status %s job %s warning %v code %s, want processed with a metadata warning", r.Status, r.JobStatus, deref(r.Warning), deref(r.Code))
		}
	}
	// Wait for the worker's own goroutines (embedding, progress) to settle.
	var g int
	var hp uint64
	testenv.Eventually(h.t, "goroutines and heap to return", patience, func() bool {
		g, hp = testenv.Settle()
		return g <= goroutines+2 && hp <= heap+64<<20
	})
	t.Logf("goroutines %d → %d, heap %d → %d MiB", goroutines, g, heap>>20, hp>>20)
}
