package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/imaging"
	"lightbox/render"
	"lightbox/tasks"
	"lightbox/testsupport/procstat"
	"lightbox/testsupport/testenv"
)

// BenchmarkExport measures the export of 200 photos with the web preset
// (seconds, and peak Go heap and resident memory above what the process
// held before) beside a baseline in the same run: the imaging engine
// rendering the same 200 originals with the same options and parallelism,
// without reading them from the blob store, zipping, storing or recording
// progress. The ratio is the export's own overhead.
func BenchmarkExport(b *testing.B) {
	const n = 200
	web := render.Settings{LongEdge: 2048, Quality: 85, IncludeNotReady: true}
	for range b.N {
		h := newHarness(b, nil)
		project := h.project()
		photos := corpusPhotos(b)
		var keys []string
		for i := range n {
			p := photos[i%len(photos)]
			data := append(bytes.Clone(p.data), []byte(uuid.NewString())...)
			asset, _ := h.finalizeWithoutEnqueue(project, data)
			h.env.SetAssets(b, testenv.AssetRow{Filename: fmt.Sprintf("%03d-%s", i, p.name)}, "id = $1", asset)
			keys = append(keys, "originals/"+project.String()+"/"+asset.String())
		}
		id, task := h.newExport(project, "web", web)
		engine, err := imaging.New(h.cfg.ImagingEngine, imaging.Config{MaxPixels: h.cfg.MaxPixels})
		if err != nil {
			b.Fatal(err)
		}
		// Warm up the engine and the allocator, so neither phase pays for
		// first use.
		warm := make([][]byte, len(photos))
		for i, p := range photos {
			warm[i] = p.data
		}
		renderAll(b, engine, warm, imaging.RenderOptions{Width: 2048, Height: 2048, Quality: 85})

		var exportDur time.Duration
		heap, rss := measure(func() {
			start := time.Now()
			if err := h.w.Handler().ProcessTask(context.Background(), task); err != nil {
				b.Fatal(err)
			}
			exportDur = time.Since(start)
		})
		if z := h.archive(id); len(z.File) != n {
			b.Fatalf("%d entries, want %d", len(z.File), n)
		}

		// Baseline: the same originals, already in memory, through the engine.
		originals := make([][]byte, n)
		for i, k := range keys {
			f, _, err := h.blobs.Open(context.Background(), k)
			if err != nil {
				b.Fatal(err)
			}
			originals[i], _ = io.ReadAll(f)
			f.Close()
		}
		var renderDur time.Duration
		baseHeap, baseRSS := measure(func() {
			start := time.Now()
			renderAll(b, engine, originals, imaging.RenderOptions{Width: 2048, Height: 2048, Quality: 85})
			renderDur = time.Since(start)
		})

		b.ReportMetric(exportDur.Seconds(), "export200_s")
		b.ReportMetric(renderDur.Seconds(), "render200_s")
		b.ReportMetric(exportDur.Seconds()/renderDur.Seconds(), "export/render")
		b.ReportMetric(heap, "export_heap_MiB")
		b.ReportMetric(baseHeap, "render_heap_MiB")
		b.ReportMetric(rss, "export_rss_MiB")
		b.ReportMetric(baseRSS, "render_rss_MiB")
	}
}

// BenchmarkExportQueueWait measures how long an export waits from its
// enqueue to its start when 2,000 ingest tasks of real photos are queued
// ahead of it, beside the same export on an empty queue, with the default
// queue weights (critical 18, default 9). Medians of several exports.
func BenchmarkExportQueueWait(b *testing.B) {
	const ingests, samples = 2000, 7
	for range b.N {
		// No sweep during the run: it would enqueue the waiting ingests early.
		h := newHarness(b, map[string]string{"SWEEP_INTERVAL": "1h"})
		project := h.project()
		var chosen []uuid.UUID
		for i, p := range corpusPhotos(b)[:5] {
			asset, _ := h.finalizeWithoutEnqueue(project, p.data)
			h.env.SetAssets(b, testenv.AssetRow{Filename: fmt.Sprintf("%d-%s", i, p.name)}, "id = $1", asset)
			chosen = append(chosen, asset)
		}
		wood := readCorpus(b, "photos/wood.jpg")
		var queued []uuid.UUID
		for range ingests {
			asset, job := h.finalizeWithoutEnqueue(project, append(bytes.Clone(wood), []byte(uuid.NewString())...))
			queued = append(queued, asset, job)
		}
		h.run()

		// wait enqueues one export and returns the time until it started,
		// once it is done.
		wait := func() time.Duration {
			id, task := h.newExport(project, "web", render.Settings{LongEdge: 1024, Quality: 80, IncludeNotReady: true}, chosen...)
			enqueued := time.Now()
			if err := tasks.Enqueue(context.Background(), h.queue, task); err != nil {
				b.Fatal(err)
			}
			testenv.Eventually(h.t, "the export", patience, func() bool { return h.export(id).Status == "done" })
			return h.export(id).StartedAt.Sub(enqueued)
		}
		var empty, behind []time.Duration
		for range samples {
			empty = append(empty, wait())
		}
		for i := 0; i < len(queued); i += 2 {
			asset, job := queued[i], queued[i+1]
			t := tasks.NewTask(tasks.IngestPayload{Job: tasks.Job{JobID: job, ProjectID: project}, AssetID: asset})
			if err := tasks.Enqueue(context.Background(), h.queue, t); err != nil {
				b.Fatal(err)
			}
		}
		for range samples {
			behind = append(behind, wait())
		}
		left := h.count(`SELECT count(*) FROM assets WHERE status = 'uploaded'`)
		if left < ingests/2 {
			b.Fatalf("only %d ingests were still queued after the last export; the measure is not behind a queue", left)
		}

		b.ReportMetric(ms(median(empty)), "wait_empty_ms")
		b.ReportMetric(ms(median(behind)), "wait_behind2000_ms")
		b.ReportMetric(ms(slices.Max(behind)), "wait_behind2000_max_ms")
		b.ReportMetric(float64(median(behind))/float64(median(empty)), "behind/empty")
		b.ReportMetric(float64(left), "ingests_still_queued")
	}
}

type namedPhoto struct {
	name string
	data []byte
}

func corpusPhotos(b *testing.B) []namedPhoto {
	dir := filepath.Join(testenv.Corpus(b), "photos")
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var out []namedPhoto
	for _, e := range entries {
		out = append(out, namedPhoto{e.Name(), readCorpus(b, "photos/"+e.Name())})
	}
	return out
}

// renderAll renders every original with as many at once as an export uses.
func renderAll(b *testing.B, engine imaging.Engine, originals [][]byte, opt imaging.RenderOptions) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(4, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(originals); i = int(next.Add(1)) - 1 {
				if _, err := engine.Render(context.Background(), originals[i], opt); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

// measure runs f and returns the peak Go heap in use and the peak resident
// memory while it ran, each above what the process held before, in MiB.
func measure(f func()) (heapMiB, rssMiB float64) {
	// Hand freed memory back first, so each phase grows from the same floor.
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	heapBefore := m.HeapInuse
	// Writing 5 to clear_refs resets the process's resident high-water mark.
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	rssBefore := procstat.Memory(os.Getpid(), "VmHWM")

	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	const mib = 1 << 20
	return float64(peak.Load()-min(peak.Load(), heapBefore)) / mib, float64(procstat.Memory(os.Getpid(), "VmHWM")-rssBefore) / mib
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
