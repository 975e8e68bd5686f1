package worker_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/uuid"

	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// defocused is the path of a corpus photo and of a copy of it defocused
// by σ = long edge / 400, as the labelled set makes it.
func defocused(t *testing.T, photo string) (src, blurred string) {
	t.Helper()
	if _, err := exec.LookPath("vips"); err != nil {
		t.Fatal("the vips command is not installed (libvips-tools; make test installs it)")
	}
	src = filepath.Join(testenv.Corpus(t), "photos", photo)
	blurred = filepath.Join(t.TempDir(), "blurred.jpg")
	if out, err := exec.Command("vips", "gaussblur", src, blurred, "6.4").CombinedOutput(); err != nil {
		t.Fatalf("vips: %v\n%s", err, out)
	}
	return src, blurred
}

// The ingest judges each photo as it reads it: a photo as taken arrives
// with no warning and a keeper's score, the same photo out of focus
// arrives warned "blurry" and scored lower, and the numbers behind both
// are in its quality.
func TestIngestJudgesFocus(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	src, blurred := defocused(t, "colorfulcups-2560x1600.jpg")
	type quality struct {
		Focus    *float64 `json:"focus"`
		Detail   *float64 `json:"detail"`
		Warnings []string `json:"warnings"`
		Score    int      `json:"score"`
	}
	judged := func(path string) quality {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		asset, _ := h.finalizeWithoutEnqueue(project, data)
		h.ingested(project, asset)
		var raw []byte
		if err := h.env.DB.GetContext(context.Background(), &raw, `SELECT quality FROM assets WHERE id = $1`, asset); err != nil {
			t.Fatal(err)
		}
		var q quality
		if err := json.Unmarshal(raw, &q); err != nil || q.Focus == nil || q.Detail == nil {
			t.Fatalf("quality %s: %v", raw, err)
		}
		return q
	}
	sharp, soft := judged(src), judged(blurred)
	if len(sharp.Warnings) != 0 || sharp.Warnings == nil {
		t.Errorf("the photo as taken: warnings %v, want none ([])", sharp.Warnings)
	}
	if !slices.Contains(soft.Warnings, "blurry") {
		t.Errorf("the defocused photo: warnings %v, want blurry", soft.Warnings)
	}
	if *soft.Focus >= *sharp.Focus || soft.Score >= sharp.Score {
		t.Errorf("defocused focus %.1f score %d, as taken %.1f score %d: want both lower", *soft.Focus, soft.Score, *sharp.Focus, sharp.Score)
	}
}

// A photo ingested before the signals existed gets them from its stored
// preview in a project:signals run: the same warnings its ingest would
// give now, its other quality keys kept; a second run finds nothing to do.
func TestAProjectSignalsRunJudgesPhotosFromBefore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	project := h.project()
	src, blurred := defocused(t, "kite-2560x1600.jpg")
	var assets []uuid.UUID
	for _, path := range []string{src, blurred} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		asset, _ := h.finalizeWithoutEnqueue(project, data)
		h.ingested(project, asset)
		assets = append(assets, asset)
	}
	// As they were stored before the signals existed.
	h.exec(`UPDATE assets SET quality = quality - 'focus' - 'motionBlur' - 'exposure' - 'detail' - 'warnings' - 'score' WHERE project_id = $1`, project)

	run := func() {
		var job store.Job
		err := h.env.Store.WithTx(ctx, func(tx *store.Store) (err error) {
			job, err = jobs.Insert(ctx, tx, tasks.SignalsPayload{Job: tasks.NewJob(project)})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.runJob(job); err != nil {
			t.Fatalf("project:signals: %v", err)
		}
	}
	run()
	warnings := func(asset uuid.UUID) []string {
		var raw []byte
		if err := h.env.DB.GetContext(ctx, &raw, `SELECT quality FROM assets WHERE id = $1`, asset); err != nil {
			t.Fatal(err)
		}
		var q struct {
			Sharpness *float64 `json:"sharpness"`
			Detail    *float64 `json:"detail"`
			Warnings  []string `json:"warnings"`
		}
		if err := json.Unmarshal(raw, &q); err != nil || q.Detail == nil || q.Sharpness == nil || q.Warnings == nil {
			t.Fatalf("quality after the run %s: %v", raw, err)
		}
		return q.Warnings
	}
	if w := warnings(assets[0]); len(w) != 0 {
		t.Errorf("the photo as taken: warnings %v, want none", w)
	}
	if w := warnings(assets[1]); !slices.Contains(w, "blurry") {
		t.Errorf("the defocused photo: warnings %v, want blurry", w)
	}
	if n := h.count(`SELECT count(*) FROM assets WHERE project_id = $1 AND NOT quality ? 'detail'`, project); n != 0 {
		t.Errorf("%d photos left unjudged", n)
	}
	run() // at least once: a second run changes nothing
	if w := warnings(assets[1]); !slices.Contains(w, "blurry") {
		t.Errorf("after a second run: warnings %v", w)
	}
}
