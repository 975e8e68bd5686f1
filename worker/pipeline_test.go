package worker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/tasks"
	"lightbox/testsupport/testenv"
	"lightbox/worker"
)

// finalize records an uploaded asset with its ingest job and enqueues it,
// as the API's finalize does.
func (h *harness) finalize(project uuid.UUID, name string, data []byte) uuid.UUID {
	h.t.Helper()
	asset, job := h.finalizeNamed(project, name, data)
	t := tasks.NewTask(tasks.IngestPayload{Job: tasks.Job{JobID: job, ProjectID: project}, AssetID: asset})
	if err := tasks.Enqueue(context.Background(), h.queue, t); err != nil {
		h.t.Fatal(err)
	}
	return asset
}

// run starts the worker until the test ends.
func (h *harness) run() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.w.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		// A task still inside libvips when the test ends is handed back, as
		// at any stop; the test's assertions are behind it.
		switch err := <-done; {
		case errors.Is(err, worker.ErrHandlersRunning):
			h.t.Logf("worker: %v", err)
		case err != nil:
			h.t.Errorf("worker: %v", err)
		}
	})
}

type assetRow struct {
	Status    string  `db:"status"`
	Code      *string `db:"error_code"`
	Width     *int    `db:"width_px"`
	Height    *int    `db:"height_px"`
	Warning   *string `db:"metadata_warning"`
	Make      *string `db:"camera_make"`
	JobStatus string  `db:"job_status"`
	Attempt   int     `db:"attempt"`
}

func (h *harness) asset(id uuid.UUID) assetRow {
	h.t.Helper()
	var r assetRow
	if err := h.env.DB.Get(&r, `SELECT a.status, a.error_code, a.width_px, a.height_px, a.metadata_warning, a.camera_make,
		j.status AS job_status, j.attempt FROM assets a JOIN jobs j ON j.asset_id = a.id AND j.type = 'asset:ingest'
		WHERE a.id = $1`, id); err != nil {
		h.t.Fatal(err)
	}
	return r
}

// blobKey is where an asset's original is stored.
func (h *harness) blobKey(id uuid.UUID) string {
	h.t.Helper()
	a, err := h.env.Store.AssetByID(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return a.BlobKey
}

func readCorpus(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Corpus(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEveryCorpusFileThroughARunningWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1s", "WORKER_CONCURRENCY": "4"})
	project := h.project()
	dir := testenv.Corpus(t)
	want := map[string]string{ // bad files and the code each fails with
		"bad/empty.jpg":                 "empty_file",
		"bad/html-named.jpg":            "unsupported_format",
		"bad/truncated-progressive.jpg": "corrupt_image",
		"bad/bomb-40000x40000.png":      "too_many_pixels",
		"bad/exif-huge-tag.jpg":         "corrupt_image",
	}
	ids := map[string]uuid.UUID{}
	for _, sub := range []string{"photos", "odd", "bad"} {
		entries, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, e := range entries {
			name := sub + "/" + e.Name()
			data := readCorpus(t, name)
			if len(data) == 0 {
				data = nil
			}
			ids[name] = h.finalize(project, e.Name(), data)
		}
	}
	h.run()
	testenv.Eventually(h.t, "every file to finish", patience, func() bool {
		return h.count(`SELECT count(*) FROM assets WHERE status IN ('uploaded', 'cull', 'search')`) == 0 &&
			h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:ingest' AND status IN ('queued', 'running')`) == 0
	})

	for name, id := range ids {
		r := h.asset(id)
		if code, bad := want[name]; bad {
			if r.Status != "failed" || r.Code == nil || *r.Code != code || r.JobStatus != "failed" || r.Attempt != 1 {
				t.Errorf("%s: status %s code %v job %s attempt %d, want failed %s on the first attempt", name, r.Status, deref(r.Code), r.JobStatus, r.Attempt, code)
			}
			info, err := h.in.GetTaskInfo("default", tasks.IngestID(id))
			if err != nil || info.State != asynq.TaskStateArchived || info.Retried != 0 {
				t.Errorf("%s: task %+v %v, want archived without retries", name, info, err)
			}
			continue
		}
		if r.Status != "ai" || r.JobStatus != "done" || r.Width == nil {
			t.Errorf("%s: status %s job %s, want ai and done", name, r.Status, r.JobStatus)
			continue
		}
		if strings.HasPrefix(name, "odd/orientation-") && (*r.Width != 50 || *r.Height != 70) {
			t.Errorf("%s: %dx%d, want 50x70 once oriented", name, *r.Width, *r.Height)
		}
		if strings.Contains(name, "2560x1600") && (*r.Width != 2560 || *r.Height != 1600) {
			t.Errorf("%s: %dx%d", name, *r.Width, *r.Height)
		}
		if n := h.count(`SELECT count(*) FROM asset_files WHERE asset_id = $1 AND kind IN ('thumbnail', 'preview')`, id); n != 2 {
			t.Errorf("%s: %d derived files, want thumbnail and preview", name, n)
		}
		var long int
		h.env.DB.Get(&long, `SELECT greatest(width_px, height_px) FROM asset_files WHERE asset_id = $1 AND kind = 'thumbnail'`, id)
		if long != min(320, max(*r.Width, *r.Height)) {
			t.Errorf("%s: thumbnail long edge %d", name, long)
		}
	}
	if r := h.asset(ids["bad/exif-infinite-loop.jpg"]); r.Status != "ai" || r.Warning == nil {
		t.Errorf("exif-infinite-loop.jpg: status %s warning %v, want processed with a metadata warning", r.Status, r.Warning)
	}
	if r := h.asset(ids["photos/kite-2560x1600.jpg"]); r.Make == nil || *r.Make == "" {
		t.Error("kite: camera make not read from EXIF")
	}
	// One debounced cluster run covered them all, and it made groups.
	if n := h.count(`SELECT run FROM cluster_runs WHERE project_id = $1`, project); n < 1 {
		t.Errorf("cluster runs: %d", n)
	}
	if n := h.count(`SELECT count(*) FROM clusters WHERE project_id = $1 AND kind = 'moment'`, project); n == 0 {
		t.Error("no moments were made")
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestIngestTwiceLeavesTheSameRows(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	asset, job := h.finalizeWithoutEnqueue(project, readCorpus(t, "photos/wood.jpg"))
	task := tasks.NewTask(tasks.IngestPayload{Job: tasks.Job{JobID: job, ProjectID: project}, AssetID: asset})

	snapshot := func() string {
		var s string
		h.env.DB.Get(&s, `SELECT concat_ws('|', a.status, a.width_px, a.height_px, a.camera_model, a.captured_at, a.quality::text,
			(SELECT string_agg(kind || ':' || checksum_sha256, ',' ORDER BY kind) FROM asset_files WHERE asset_id = a.id),
			(SELECT hash FROM perceptual_hashes WHERE asset_id = a.id),
			(SELECT count(*) FROM jobs WHERE asset_id = a.id)) FROM assets a WHERE a.id = $1`, asset)
		return s
	}
	for i := range 2 {
		if err := h.w.Handler().ProcessTask(context.Background(), task); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	first := snapshot()
	if err := h.w.Handler().ProcessTask(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	if again := snapshot(); again != first || !strings.HasPrefix(first, "cull|") {
		t.Fatalf("rows differ after another run:\n%s\n%s", first, again)
	}
	if n := h.count(`SELECT count(*) FROM jobs WHERE asset_id = $1 AND type = 'asset:embed'`, asset); n != 1 {
		t.Fatalf("%d embed jobs after three ingests, want 1", n)
	}
}
