package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/image/draw"

	"lightbox/app"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// faceDemo is the six group photos @vladmandic/face-api ships in its
// demo/ folder, read from the sidecar's node_modules, and their faces
// counted by eye.
var faceDemo = []facePhoto{
	{"sample1.jpg", 3}, {"sample2.jpg", 3}, {"sample3.jpg", 3},
	{"sample4.jpg", 4}, {"sample5.jpg", 5}, {"sample6.jpg", 4},
}

// noPeople are corpus photos without a person in them; the face
// sidecar's own tests (faces/sidecar/test/faces.test.js) search the corpus's others.
var noPeople = []string{"blinds.jpg", "wood.jpg", "storm.jpg", "dune.jpg", "elephants-3840x2160-progressive.jpg",
	"colorfulcups-2560x1600.jpg", "fallenleaf-2560x1600.jpg", "coldripple-2560x1600.jpg", "darkesthour-2560x1600.jpg"}

func readDemo(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.FaceDemo(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// facesOn switches faces on for project, as PATCH detectFaces does.
func (h *harness) facesOn(project uuid.UUID, on bool) {
	h.t.Helper()
	if _, err := app.UpdateProject(context.Background(), h.dispatcher().Store, h.owner, project, store.ProjectInput{DetectFaces: &on}); err != nil {
		h.t.Fatal(err)
	}
}

// freePort is a loopback port nothing listens on now.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// facePhoto is a photo finalized by finalizeFaces: its name, and how many
// faces it has.
type facePhoto struct {
	name  string
	faces int
}

// finalizeFaces finalizes the demo photos of people and the corpus photos
// without people named in empty in project.
func (h *harness) finalizeFaces(project uuid.UUID, people []facePhoto, empty []string) map[uuid.UUID]facePhoto {
	h.t.Helper()
	want := map[uuid.UUID]facePhoto{}
	for _, d := range people {
		want[h.finalize(project, d.name, readDemo(h.t, d.name))] = facePhoto{d.name, d.faces}
	}
	for _, name := range empty {
		want[h.finalize(project, name, readCorpus(h.t, "photos/"+name))] = facePhoto{name, 0}
	}
	return want
}

// checkFaces checks the faces found in the photos of want, and fails the
// test unless at least 90 % of the demo photos' faces were found (20 of
// all six photos' 22).
func (h *harness) checkFaces(want map[uuid.UUID]facePhoto) {
	h.t.Helper()
	found, total := 0, 0
	var counts []string
	for id, p := range want {
		scan, fs, err := h.env.Store.Faces(context.Background(), id)
		if err != nil || scan == nil {
			h.t.Fatalf("%s: scan %v, %v", p.name, scan, err)
		}
		counts = append(counts, fmt.Sprintf("%s %d/%d", p.name, scan.FaceCount, p.faces))
		if scan.FaceCount > p.faces || len(fs) != scan.FaceCount {
			h.t.Errorf("%s: %d faces (%d rows) where there are %d", p.name, scan.FaceCount, len(fs), p.faces)
		}
		found += min(scan.FaceCount, p.faces)
		total += p.faces
		for _, f := range fs {
			if f.Sharpness <= 0 || f.EyeLeft == nil || f.Yaw == nil || f.W <= 0 {
				h.t.Errorf("%s face %d: %+v", p.name, f.N, f)
			}
		}
		// The preview, not the original, was read.
		var w int
		h.env.DB.Get(&w, `SELECT width_px FROM asset_files WHERE asset_id = $1 AND kind = 'preview'`, id)
		if w != scan.Width {
			h.t.Errorf("%s: faces found in %d pixels wide, the preview is %d", p.name, scan.Width, w)
		}
	}
	if found < total-total/10 {
		h.t.Fatalf("found %d of %d faces: %s", found, total, strings.Join(counts, ", "))
	}
	h.t.Logf("found %d of %d faces: %s", found, total, strings.Join(counts, ", "))
}

func TestFacesThroughARunningWorker(t *testing.T) {
	t.Parallel()
	svc := testenv.StartFaces(t, "ML_WORKERS=2")
	h := newHarness(t, map[string]string{"FACES_SECRET": svc.Secret, "FACES_URL": svc.Endpoint(), "CLUSTER_DELAY": "1s"})
	h.explainFaces(svc)
	project, off := h.project(), h.project()
	h.facesOn(project, true)
	want := h.finalizeFaces(project, faceDemo, noPeople)
	// The same photos in a project that did not opt in.
	for _, d := range faceDemo[:3] {
		h.finalize(off, d.name, readDemo(t, d.name))
	}
	h.run()
	testenv.Eventually(h.t, "every photo's faces", patience, func() bool {
		return h.count(`SELECT count(*) FROM face_scans WHERE project_id = $1`, project) == len(want) &&
			h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:faces' AND status <> 'done'`) == 0
	})

	h.checkFaces(want)
	if n := h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:faces' AND (queue <> 'faces' OR attempt <> 1)`); n != 0 {
		t.Errorf("%d faces jobs off the faces queue or on a later attempt", n)
	}
	// None recorded in its photo's ingest transaction, whose time the
	// embedding job's row bears (a job recorded again keeps it; the
	// preview's row takes the time of an ingest that ran again): they
	// follow the embedding, so that no embedding queues behind a face scan.
	if n := h.count(`SELECT count(*) FROM jobs j JOIN jobs e ON e.asset_id = j.asset_id AND e.type = 'asset:embed'
		WHERE j.type = 'asset:faces' AND j.project_id = $1 AND j.created_at > e.created_at`, project); n != len(want) {
		t.Errorf("%d of %d faces jobs recorded after their photo's ingest", n, len(want))
	}

	// A project that did not opt in gets no faces job, once its photos
	// are as far along as the others.
	testenv.Eventually(h.t, "the other project's photos to be processed", patience, func() bool {
		return h.count(`SELECT count(*) FROM assets WHERE project_id = $1 AND status IN ('search', 'ai')`, off) == 3
	})
	if n := h.count(`SELECT count(*) FROM jobs WHERE project_id = $1 AND type = 'asset:faces'`, off); n != 0 {
		t.Errorf("%d faces jobs in a project without faces", n)
	}
	if n := h.count(`SELECT count(*) FROM face_scans WHERE project_id = $1`, off); n != 0 {
		t.Errorf("%d face scans in a project without faces", n)
	}

	// Switching faces off deletes them all.
	h.facesOn(project, false)
	if n := h.count(`SELECT count(*) FROM face_scans WHERE project_id = $1`, project) +
		h.count(`SELECT count(*) FROM faces f JOIN assets a ON a.id = f.asset_id WHERE a.project_id = $1`, project); n != 0 {
		t.Errorf("%d face rows left after faces were switched off", n)
	}
}

// Photos ingested before their project switched faces on get their faces
// when it does, each from one asset:faces job, however often it is
// switched on.
func TestFacesOfPhotosAlreadyInAProjectSwitchedOn(t *testing.T) {
	t.Parallel()
	svc := testenv.StartFaces(t, "ML_WORKERS=2")
	h := newHarness(t, map[string]string{"FACES_SECRET": svc.Secret, "FACES_URL": svc.Endpoint(), "CLUSTER_DELAY": "1s"})
	h.explainFaces(svc)
	project, off := h.project(), h.project()
	// Detection itself is TestFacesThroughARunningWorker's.
	want := h.finalizeFaces(project, faceDemo[:2], noPeople[:1])
	for _, d := range faceDemo[:2] {
		h.finalize(off, d.name, readDemo(t, d.name))
	}
	h.run()
	testenv.Eventually(h.t, "every photo ingested", patience, func() bool {
		return h.count(`SELECT count(*) FROM assets WHERE status IN ('cull', 'search', 'ai')`) == len(want)+2
	})
	if n := h.count(`SELECT count(*) FROM jobs WHERE type IN ('asset:faces', 'project:faces')`); n != 0 {
		t.Fatalf("%d faces jobs before faces were switched on", n)
	}

	h.facesOn(project, true)
	testenv.Eventually(h.t, "the faces of the photos already in the project", patience, func() bool {
		return h.count(`SELECT count(*) FROM face_scans WHERE project_id = $1`, project) == len(want) &&
			h.count(`SELECT count(*) FROM jobs WHERE type IN ('asset:faces', 'project:faces') AND status <> 'done'`) == 0
	})
	h.checkFaces(want)
	for id, p := range want {
		// The job its embedding would have recorded, run once.
		if n := h.count(`SELECT count(*) FROM jobs WHERE id = $1 AND asset_id = $2 AND type = 'asset:faces' AND attempt = 1`,
			uuid.NewSHA1(id, []byte("faces")), id); n != 1 {
			t.Errorf("%s: no asset:faces job under the id its embedding gives it", p.name)
		}
	}

	// On again: nothing more is recorded.
	h.facesOn(project, true)
	if n := h.count(`SELECT count(*) FROM jobs WHERE project_id = $1 AND type = 'project:faces'`, project); n != 1 {
		t.Errorf("%d project:faces jobs after switching faces on twice", n)
	}
	if n := h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:faces' AND (status <> 'done' OR attempt <> 1)`); n != 0 {
		t.Errorf("%d asset:faces jobs recorded again or run twice", n)
	}
	if n := h.count(`SELECT count(*) FROM jobs WHERE project_id = $1`, off) -
		h.count(`SELECT count(*) FROM jobs WHERE project_id = $1 AND type IN ('asset:ingest', 'asset:embed')`, off); n != 0 {
		t.Errorf("%d jobs other than ingest and embeddings in a project without faces", n)
	}
	if n := h.count(`SELECT count(*) FROM face_scans WHERE project_id = $1`, off); n != 0 {
		t.Errorf("%d face scans in a project without faces", n)
	}
}

func TestFacesWaitOutASidecarKilledMidBatch(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	svc := testenv.StartFaces(t, "ML_WORKERS=1", "ML_PORT="+port)
	// The demo photos' faces are all found on the whole frame: tiles
	// (whose accuracy TestFacesThroughARunningWorker checks) would only
	// make the batch slower, not the outage different.
	h := newHarness(t, map[string]string{"FACES_SECRET": svc.Secret, "FACES_URL": svc.Endpoint() + "?tiles=off", "WORKER_CONCURRENCY": "2"})
	project := h.project()
	h.facesOn(project, true)
	var ids []uuid.UUID
	for _, d := range faceDemo {
		ids = append(ids, h.finalize(project, d.name, readDemo(t, d.name)))
	}
	h.run()
	scanned := func() int { return h.count(`SELECT count(*) FROM face_scans WHERE project_id = $1`, project) }
	testenv.Eventually(h.t, "the first photo's faces", patience, func() bool { return scanned() > 0 })
	svc.Kill()
	if n := scanned(); n == len(ids) {
		t.Fatalf("every photo was done before the sidecar was killed")
	}
	// The jobs left wait for it, saying why, without spending attempts.
	testenv.Eventually(h.t, "a faces job waiting for the sidecar", patience, func() bool {
		return h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:faces' AND status = 'queued' AND error_code = 'service_unavailable'`) > 0
	})
	testenv.StartFaces(t, "ML_WORKERS=1", "ML_PORT="+port, "ML_SECRET="+svc.Secret)
	testenv.Eventually(h.t, "every photo's faces once the sidecar is back", patience, func() bool {
		return scanned() == len(ids) && h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:faces' AND status <> 'done'`) == 0
	})
	if n := h.count(`SELECT count(*) FROM jobs WHERE type = 'asset:faces' AND attempt <> 1`); n != 0 {
		t.Errorf("%d faces jobs spent an attempt on the outage", n)
	}
	if n := h.count(`SELECT sum(face_count) FROM face_scans WHERE project_id = $1`, project); n < 20 {
		t.Errorf("%d faces after the outage, want at least 20", n)
	}
}

// blurredJPEG is data shrunk to a quarter and enlarged back (about what a
// missed focus looks like at preview size), with data's EXIF: the same
// camera at the same instant, a burst.
func blurredJPEG(t testing.TB, data []byte) []byte {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	small := image.NewRGBA(image.Rect(0, 0, b.Dx()/4, b.Dy()/4))
	draw.BiLinear.Scale(small, small.Bounds(), img, b, draw.Src, nil)
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.BiLinear.Scale(out, out.Bounds(), small, small.Bounds(), draw.Src, nil)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, out, &jpeg.Options{Quality: 92}); err != nil {
		t.Fatal(err)
	}
	exif := app1(data)
	if exif == nil {
		t.Fatal("the photo has no EXIF to copy")
	}
	return append(append([]byte{0xff, 0xd8}, exif...), buf.Bytes()[2:]...)
}

// app1 is the EXIF segment among a JPEG's first segments, marker included.
func app1(data []byte) []byte {
	for i := 2; i+4 <= len(data) && data[i] == 0xff; {
		n := int(data[i+2])<<8 | int(data[i+3])
		if data[i+1] == 0xe1 && i+2+n <= len(data) {
			return data[i : i+2+n]
		}
		if data[i+1] == 0xda {
			break
		}
		i += 2 + n
	}
	return nil
}

func TestFacesPickTheBurstFrameWithSharpFaces(t *testing.T) {
	t.Parallel()
	svc := testenv.StartFaces(t, "ML_WORKERS=1")
	// Four faces the whole frame finds: tiles would only take longer.
	h := newHarness(t, map[string]string{"FACES_SECRET": svc.Secret, "FACES_URL": svc.Endpoint() + "?tiles=off", "CLUSTER_DELAY": "1s"})
	project := h.project()
	h.facesOn(project, true)
	photo := readDemo(t, "sample6.jpg")
	// The soft copy first, so that upload order does not pick the winner.
	soft, softJob := h.finalizeNamed(project, "soft.jpg", blurredJPEG(t, photo))
	sharp, sharpJob := h.finalizeNamed(project, "sharp.jpg", photo)
	for asset, job := range map[uuid.UUID]uuid.UUID{soft: softJob, sharp: sharpJob} {
		task := tasks.NewTask(tasks.IngestPayload{Job: tasks.Job{JobID: job, ProjectID: project}, AssetID: asset})
		if err := tasks.Enqueue(context.Background(), h.queue, task); err != nil {
			t.Fatal(err)
		}
	}
	h.run()

	var winner uuid.UUID
	var why string
	// Once both frames' faces are in, each has a face signal above the
	// none of a frame without a scan.
	testenv.Eventually(h.t, "a burst ranked on both frames' faces", patience, func() bool {
		err := h.env.DB.QueryRow(`SELECT c.winner_asset_id, array_to_string(c.why_winner, ',') FROM clusters c
			WHERE c.project_id = $1 AND c.kind = 'burst' AND (SELECT count(*) FROM cluster_assets ca
				WHERE ca.cluster_id = c.id AND (ca.signals->>'facesInFocus')::float8 > 0) = 2`, project).Scan(&winner, &why)
		return err == nil
	})
	if !strings.Contains(","+why+",", ",faces_in_focus,") {
		t.Errorf("the burst's winner is there because %s, not faces_in_focus", why)
	}
	if winner != sharp {
		t.Fatalf("the burst's winner is %v (sharp %v, soft %v), because %s", winner, sharp, soft, why)
	}
	var counts []int
	for _, id := range []uuid.UUID{sharp, soft} {
		scan, _, err := h.env.Store.Faces(context.Background(), id)
		if err != nil || scan == nil {
			t.Fatalf("faces of %v: %v %v", id, scan, err)
		}
		counts = append(counts, scan.FaceCount, scan.OutOfFocus)
	}
	// sample6.jpg's four faces, all in focus; the copy's soft.
	if counts[0] != 4 || counts[1] != 0 || counts[3] == 0 {
		t.Errorf("faces and soft faces: sharp %d/%d, soft %d/%d", counts[0], counts[1], counts[2], counts[3])
	}
	t.Logf("winner because %s", why)
}

// With face scans waiting, an embedding and a cluster run queued after
// them run first: the scans wait on a queue of their own, below low, so
// they never hold a place in the line of the work that makes photos "ai".
// One task slot, so the queues alone set the order: on low, their line,
// every scan runs first.
func TestFaceScansNeverHoldUpEmbeddingsOrClusterRuns(t *testing.T) {
	t.Parallel()
	svc := testenv.StartFaces(t, "ML_WORKERS=1")
	// Scans record cluster runs of their own project; they wait an hour.
	h := newHarness(t, map[string]string{"FACES_SECRET": svc.Secret, "FACES_URL": svc.Endpoint() + "?tiles=off", "WORKER_CONCURRENCY": "1", "CLUSTER_DELAY": "1h"})
	h.explainFaces(svc)
	ctx := context.Background()
	scanned, other := h.project(), h.project()
	h.facesOn(scanned, true)

	// Photos ingested and embedded before any worker runs: each
	// embedding records its photo's scan, which waits.
	const scans = 8
	for i := range scans {
		data := append(readDemo(t, faceDemo[i%len(faceDemo)].name), []byte(uuid.NewString())...)
		asset, _ := h.finalizeWithoutEnqueue(scanned, data)
		h.ingested(scanned, asset)
		recorded, err := h.env.Store.AssetJobs(ctx, asset)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(recorded, func(j store.Job) bool { return j.Type == tasks.TypeEmbed })
		if i < 0 {
			t.Fatalf("no embedding job recorded by the ingest of %s", asset)
		}
		embed := recorded[i]
		if err := h.runJob(embed); err != nil {
			t.Fatal(err)
		}
		// The embedding the ingest queued has run.
		if err := h.in.DeleteTask(embed.Queue, embed.TaskID); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.count(`SELECT count(*) FROM jobs WHERE project_id = $1 AND type = 'asset:faces' AND status = 'queued'`, scanned); n != scans {
		t.Fatalf("%d scans waiting, want %d", n, scans)
	}

	// Then a cluster run of another project, due now, and a photo there
	// whose embedding follows its ingest.
	run, err := h.env.Store.ScheduleCluster(ctx, other, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.dispatcher().EnqueueClusterRun(ctx, *run); err != nil {
		t.Fatal(err)
	}
	photo := h.finalize(other, "wood.jpg", readCorpus(t, "photos/wood.jpg"))
	h.run()
	testenv.Eventually(h.t, "every scan, the cluster run and the embedding", patience, func() bool {
		return h.count(`SELECT count(*) FROM face_scans WHERE project_id = $1`, scanned) == scans &&
			h.count(`SELECT count(*) FROM cluster_runs WHERE project_id = $1 AND done_run >= $2`, other, run.Run) == 1 &&
			h.count(`SELECT count(*) FROM embeddings WHERE asset_id = $1`, photo) == 1
	})
	beforeCluster := h.count(`SELECT count(*) FROM face_scans WHERE project_id = $1
		AND scanned_at < (SELECT started_at FROM cluster_runs WHERE project_id = $2)`, scanned, other)
	beforeEmbedding := h.count(`SELECT count(*) FROM face_scans WHERE project_id = $1
		AND scanned_at < (SELECT created_at FROM embeddings WHERE asset_id = $2)`, scanned, photo)
	t.Logf("of %d scans queued first, %d ran before the cluster run, %d before the embedding", scans, beforeCluster, beforeEmbedding)
	if beforeCluster >= scans/2 || beforeEmbedding >= scans/2 {
		t.Errorf("of %d scans queued first, %d ran before the cluster run and %d before the embedding: they held up the low queue",
			scans, beforeCluster, beforeEmbedding)
	}
}

// A scan picked while a task is ready on another queue the worker serves
// steps aside for a few seconds without spending a retry; a paused
// queue's tasks, which wait for an operator, do not hold it back. This
// worker has no face provider, so a scan that goes ahead waits for one.
func TestFaceScanStepsAsideWhileOtherWorkWaits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	project := h.project()
	h.facesOn(project, true)
	asset := h.finalize(project, "wood.jpg", readCorpus(t, "photos/wood.jpg")) // its ingest waits on default
	scan := tasks.NewFaces(project, asset)
	if _, err := jobs.Insert(ctx, h.env.Store, scan); err != nil {
		t.Fatal(err)
	}
	run := func() *tasks.RateLimitedError {
		t.Helper()
		err := h.w.Handler().ProcessTask(ctx, tasks.NewTask(scan))
		var waits *tasks.RateLimitedError
		if !errors.As(err, &waits) || tasks.IsFailure(err) {
			t.Fatalf("the scan returned %v, want a wait that spends no retry", err)
		}
		return waits
	}
	if w := run(); w.Cause != nil || w.RetryAfter != 5*time.Second {
		t.Fatalf("with an ingest waiting the scan %v, want it to step aside for 5s", w)
	}
	if err := h.in.PauseQueue(tasks.QueueDefault); err != nil {
		t.Fatal(err)
	}
	if w := run(); w.Cause == nil {
		t.Fatalf("with only a paused queue's ingest waiting the scan %v, want it to go ahead and wait for a provider", w)
	}
}

// explainFaces logs, when t fails, what became of every faces job and what
// the sidecar printed, so a scan that never ends says where it stopped.
func (h *harness) explainFaces(svc *testenv.FaceService) {
	h.t.Cleanup(func() {
		if !h.t.Failed() {
			return
		}
		var rows []struct {
			Type    string  `db:"type"`
			Status  string  `db:"status"`
			Attempt int     `db:"attempt"`
			Code    *string `db:"error_code"`
			Message *string `db:"error_message"`
			Next    *string `db:"next_run_at"`
		}
		if err := h.env.DB.Select(&rows, `SELECT type, status, attempt, error_code, error_message, next_run_at::text
			FROM jobs WHERE status <> 'done' ORDER BY type, created_at`); err != nil {
			h.t.Logf("jobs: %v", err)
		}
		for _, r := range rows {
			h.t.Logf("job %s %s attempt %d: %s %s (next %s)", r.Type, r.Status, r.Attempt,
				deref(r.Code), deref(r.Message), deref(r.Next))
		}
		h.t.Logf("face sidecar:\n%s", svc.Log())
	})
}
