package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/chain"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/procstat"
	"lightbox/testsupport/testenv"
)

// benchPhotos is how many photos the pipeline benchmark ingests;
// LIGHTBOX_BENCH_PHOTOS overrides it for a quicker look.
func benchPhotos() int {
	if n, err := strconv.Atoi(os.Getenv("LIGHTBOX_BENCH_PHOTOS")); err == nil && n > 0 {
		return n
	}
	return 2000
}

// twelveMP crops 4000×3000 windows from the corpus's largest photos at
// different offsets and re-encodes them: distinct 12 MP photos. The crop
// steps are chosen so 40 windows do not repeat.
func twelveMP(b *testing.B, n int) [][]byte {
	var sources []image.Image
	for _, name := range []string{"photos/kleiber-6028x3391.jpg", "photos/elephants-3840x2160-progressive.jpg"} {
		img, err := jpeg.Decode(bytes.NewReader(readCorpus(b, name)))
		if err != nil {
			b.Fatal(err)
		}
		sources = append(sources, img)
	}
	const w, h = 4000, 3000
	out := make([][]byte, n)
	for i := range n {
		src := sources[0]
		bounds := src.Bounds()
		x := (i * 97) % max(1, bounds.Dx()-w)
		y := (i * 31) % max(1, bounds.Dy()-h)
		crop := src.(interface {
			SubImage(image.Rectangle) image.Image
		}).SubImage(image.Rect(x, y, x+w, y+h))
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, crop, &jpeg.Options{Quality: 85}); err != nil {
			b.Fatal(err)
		}
		out[i] = buf.Bytes()
	}
	return out
}

// BenchmarkPipeline finalizes 2,000 distinct 12 MP photos and runs a real
// worker binary until all are cull-ready and then ai-ready, measuring
// seconds, photos/s, time to cull per photo and the worker's peak memory.
// Base images are 40 distinct crops; each photo differs from the others
// by its bytes, so the run also exercises duplicate grouping.
//
// It runs twice in the same run: in the single pass, where each photo's
// ingest makes its thumbnail and preview from one decode (THUMBNAILS_FIRST
// off), and with each photo's thumbnail queued ahead of its ingest, as
// finalize does by default. all_thumbnails_s is the seconds until every
// photo's thumbnail is recorded (and so served), all_cull_s until every
// photo is cull-ready; single_ names the single pass's, and cull_growth
// is all_cull_s over the single pass's. The other figures are the default
// order's.
//
// Before the workers start, the same photos go through the worker's image
// step alone, Process at the worker's concurrency in this process
// (processAlone): of_process is its seconds over ours to all cull, 1
// meaning the queue, storage, records and events around the pixels cost
// nothing. For information, they are also decoded by libvips at the
// preview's scale and nothing else (decodeFloor): of_decode_floor is that
// floor's seconds over ours. The CPU time per photo of each is reported
// too. LIGHTBOX_BENCH_PERF=file records the worker with `perf record -g`
// for a profile.
func BenchmarkPipeline(b *testing.B) {
	n := benchPhotos()
	bases := twelveMP(b, 40)
	photo := func(i int) []byte {
		return append(bytes.Clone(bases[i%len(bases)]), []byte(fmt.Sprintf("photo %d", i))...)
	}
	for range b.N {
		single := runPipeline(b, n, photo, false)
		cpuBefore := procstat.CPU(os.Getpid())
		floor := decodeFloor(b, n, photo)
		floorCPU := procstat.CPU(os.Getpid()) - cpuBefore
		cpuBefore = procstat.CPU(os.Getpid())
		alone := processAlone(b, n, single.concurrency, photo)
		aloneCPU := procstat.CPU(os.Getpid()) - cpuBefore
		r := runPipeline(b, n, photo, true)

		b.ReportMetric(r.thumbs[len(r.thumbs)-1], "all_thumbnails_s")
		b.ReportMetric(r.toCull.Seconds(), "all_cull_s")
		b.ReportMetric(single.thumbs[len(single.thumbs)-1], "single_all_thumbnails_s")
		b.ReportMetric(single.toCull.Seconds(), "single_all_cull_s")
		b.ReportMetric(r.toCull.Seconds()/single.toCull.Seconds(), "cull_growth")
		b.ReportMetric(r.thumbs[len(r.thumbs)/2], "p50_s_to_thumbnail")
		b.ReportMetric(single.thumbs[len(single.thumbs)/2], "single_p50_s_to_thumbnail")
		b.ReportMetric(alone.Seconds(), "process_alone_s")
		b.ReportMetric(alone.Seconds()/r.toCull.Seconds(), "of_process")
		b.ReportMetric(alone.Seconds()/single.toCull.Seconds(), "single_of_process")
		b.ReportMetric(floor.Seconds(), "floor_s")
		b.ReportMetric(floor.Seconds()/r.toCull.Seconds(), "of_decode_floor")
		b.ReportMetric(r.toAI.Seconds(), "s_to_all_ai")
		b.ReportMetric(float64(n)/r.toCull.Seconds(), "photos/s")
		b.ReportMetric(r.lat[len(r.lat)/2], "p50_s_to_cull")
		b.ReportMetric(r.lat[len(r.lat)*95/100], "p95_s_to_cull")
		b.ReportMetric(float64(r.peak)/(1<<20), "worker_peak_MiB")
		// CPU per photo compares the two without the load of other
		// processes on the machine, which the seconds include.
		b.ReportMetric(r.cpu.Seconds()/float64(n)*1000, "worker_cpu_ms/photo")
		b.ReportMetric(single.cpu.Seconds()/float64(n)*1000, "single_worker_cpu_ms/photo")
		b.ReportMetric(floorCPU.Seconds()/float64(n)*1000, "floor_cpu_ms/photo")
		b.ReportMetric(aloneCPU.Seconds()/float64(n)*1000, "process_cpu_ms/photo")
	}
}

// pipelineRun is one run of BenchmarkPipeline's: seconds from the
// worker's start to all cull and all ai, each photo's seconds to its
// thumbnail and to cull (sorted), the worker's CPU and peak memory.
type pipelineRun struct {
	toCull, toAI time.Duration
	thumbs, lat  []float64
	cpu          time.Duration
	peak         int64
	concurrency  int
}

// runPipeline finalizes n photos, with their thumbnails queued ahead of
// their ingests when thumbsFirst (as finalize does), then starts a worker
// binary and waits until every photo is cull-ready and then ai-ready.
func runPipeline(b *testing.B, n int, photo func(int) []byte, thumbsFirst bool) pipelineRun {
	h := newHarness(b, map[string]string{"CLUSTER_DELAY": "2s"})
	project := h.project()
	var thumbs []*asynq.Task
	for i := range n {
		asset := h.finalize(project, fmt.Sprintf("%04d.jpg", i), photo(i))
		if thumbsFirst {
			thumbs = append(thumbs, tasks.NewTask(tasks.ThumbnailPayload{ProjectID: project, AssetID: asset}))
		}
	}
	if len(thumbs) > 0 {
		for i, err := range tasks.EnqueueAll(context.Background(), h.queue, thumbs) {
			if err != nil {
				b.Fatalf("enqueue thumbnail %d: %v", i, err)
			}
		}
	}
	keyFile := filepath.Join(b.TempDir(), "chain.key")
	chain.GenerateKeyFile(keyFile)
	cmd := exec.Command(testenv.Binary(b, "lightbox/cmd/worker"))
	cmd.Env = append(os.Environ(), "DATABASE_URL="+h.env.DSN, "REDIS_URL="+h.env.RedisURL, "DATA_DIR="+h.cfg.DataDir,
		"CHAIN_KEY_FILE="+keyFile, "CLUSTER_DELAY=2s", "LOG_LEVEL=error")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stopPerf := procstat.Perf(b, cmd.Process.Pid, os.Getenv("LIGHTBOX_BENCH_PERF"))
	testenv.Eventually(h.t, "all cull-ready", time.Hour, func() bool {
		return h.count(`SELECT count(*) FROM assets WHERE status IN ('uploaded')`) == 0
	})
	r := pipelineRun{toCull: time.Since(start), concurrency: h.cfg.WorkerConcurrency}
	stopPerf()
	r.cpu = procstat.CPU(cmd.Process.Pid)
	testenv.Eventually(h.t, "all ai-ready", time.Hour, func() bool {
		return h.count(`SELECT count(*) FROM assets WHERE status = 'ai' OR status = 'failed'`) == n
	})
	r.toAI = time.Since(start)
	r.peak = procstat.Memory(cmd.Process.Pid, "VmHWM")
	cmd.Process.Kill()
	cmd.Wait()

	if failed := h.count(`SELECT count(*) FROM assets WHERE status = 'failed'`); failed > 0 {
		b.Fatalf("%d photos failed", failed)
	}
	h.env.DB.Select(&r.lat, `SELECT extract(epoch FROM ingested_at - $1::timestamptz) FROM assets ORDER BY 1`, start)
	h.env.DB.Select(&r.thumbs, `SELECT extract(epoch FROM thumbnail_at - $1::timestamptz) FROM assets ORDER BY 1`, start)
	if len(r.thumbs) != n || len(r.lat) != n {
		b.Fatalf("%d thumbnails and %d ingests recorded of %d photos", len(r.thumbs), len(r.lat), n)
	}
	return r
}

// defineNoop puts the no-op task in the task table once: with job rows,
// so the middleware records its states as it does every job's.
var defineNoop sync.Once

// benchRounds is how many times the queue benchmark alternates the
// baseline and our path; LIGHTBOX_BENCH_ROUNDS overrides it.
func benchRounds() int {
	if n, err := strconv.Atoi(os.Getenv("LIGHTBOX_BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 5
}

// BenchmarkQueueOverhead runs 2,000 no-op tasks through our path (job rows
// recorded in Postgres, parallel enqueue, the worker's middleware writing
// each job's states and publishing its events) beside raw Asynq enqueue
// and process of the same number of no-op tasks, in the same run. The two
// alternate for a few rounds and each reports its fastest round: on a
// machine shared with other work, one round of either can be several
// times slower than the next.
//
// Each side starts its server once its tasks are in Redis. An idle Asynq
// processor sleeps 100–300 ms between polls (TaskCheckInterval 200 ms),
// so with the servers started first, the comparison mostly measured
// which side's first poll happened to fall after its enqueue began: raw
// Asynq's often did, ours, behind the recording of its jobs, hardly ever.
// Started last, both pick their tasks up at once and the two differ in
// the work alone.
func BenchmarkQueueOverhead(b *testing.B) {
	const n = 2000
	defineNoop.Do(func() { tasks.Define("bench:noop", tasks.QueueDefault, true) })
	for range b.N {
		var raw, ours time.Duration
		for range benchRounds() {
			r, o := rawAsynq(b, n), ourQueue(b, n)
			if raw == 0 || r < raw {
				raw = r
			}
			if ours == 0 || o < ours {
				ours = o
			}
		}
		b.ReportMetric(n/raw.Seconds(), "raw_tasks/s")
		b.ReportMetric(n/ours.Seconds(), "our_tasks/s")
		b.ReportMetric(raw.Seconds()/ours.Seconds(), "ours/raw")
	}
}

// rawAsynq is how long raw Asynq takes to enqueue and process n no-op
// tasks, enqueued as ours are, the same number at once, so the two differ
// only in what our path adds.
func rawAsynq(b *testing.B, n int) time.Duration {
	h := newHarness(b, nil)
	opt, _ := asynq.ParseRedisURI(h.env.RedisURL)
	var done atomic.Int64
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: h.cfg.WorkerConcurrency, Queues: tasks.DefaultWeights,
		TaskCheckInterval: 200 * time.Millisecond, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("bench:noop", func(context.Context, *asynq.Task) error { done.Add(1); return nil })
	start := time.Now()
	raws := make([]*asynq.Task, n)
	for i := range raws {
		raws[i] = asynq.NewTask("bench:noop", []byte(strconv.Itoa(i)), asynq.Queue("default"))
	}
	for _, err := range tasks.EnqueueAll(context.Background(), h.queue, raws) {
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := srv.Start(mux); err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	testenv.EventuallyEvery(b, "every task to be processed", 5*time.Minute, 5*time.Millisecond, func() bool { return done.Load() >= int64(n) })
	return time.Since(start)
}

// ourQueue is how long n no-op tasks take through our path, from recording
// their jobs to every job's row saying done.
func ourQueue(b *testing.B, n int) time.Duration {
	h := newHarness(b, nil)
	project := h.project()
	var done atomic.Int64
	h.w.Handle("bench:noop", asynq.HandlerFunc(func(context.Context, *asynq.Task) error { done.Add(1); return nil }))
	start := time.Now()
	jobs := make([]store.Job, n)
	ts := make([]*asynq.Task, n)
	for i := range jobs {
		jobs[i] = plainJob("bench:noop", project)
		ts[i] = asynq.NewTask("bench:noop", jobs[i].Payload, asynq.Queue("default"), asynq.TaskID(jobs[i].TaskID))
	}
	if _, err := h.env.Store.InsertJobs(context.Background(), jobs); err != nil {
		b.Fatal(err)
	}
	for _, err := range tasks.EnqueueAll(context.Background(), h.queue, ts) {
		if err != nil {
			b.Fatal(err)
		}
	}
	h.run()
	testenv.EventuallyEvery(b, "every task to be processed and its job recorded done", 5*time.Minute, 5*time.Millisecond, func() bool {
		return done.Load() >= int64(n) && h.count(`SELECT count(*) FROM jobs WHERE status = 'done'`) >= n
	})
	return time.Since(start)
}

// plainJob is a job row of typ in project, on the default queue, whose
// task carries nothing but the job reference.
func plainJob(typ string, project uuid.UUID) store.Job {
	id := uuid.New()
	payload := []byte(fmt.Sprintf(`{"jobId":%q,"projectId":%q}`, id, project))
	return store.Job{ID: id, ProjectID: project, Type: typ, Queue: "default", TaskID: typ + ":" + id.String(), Payload: payload}
}
