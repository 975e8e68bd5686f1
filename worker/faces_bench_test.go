package worker_test

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/image/draw"

	"lightbox/chain"
	"lightbox/testsupport/procstat"
	"lightbox/testsupport/testenv"
)

// groupPhotos are the six demo group photos enlarged to 12 MP (4000 on the
// long side) and re-encoded, so that ingest decodes what a camera writes.
func groupPhotos(b *testing.B) [][]byte {
	var out [][]byte
	for _, d := range faceDemo {
		img, err := jpeg.Decode(bytes.NewReader(readDemo(b, d.name)))
		if err != nil {
			b.Fatal(err)
		}
		r := img.Bounds()
		w, h := 4000, 4000*r.Dy()/r.Dx()
		if r.Dy() > r.Dx() {
			w, h = 4000*r.Dx()/r.Dy(), 4000
		}
		big := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.CatmullRom.Scale(big, big.Bounds(), img, r, draw.Src, nil)
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, big, &jpeg.Options{Quality: 85}); err != nil {
			b.Fatal(err)
		}
		out = append(out, buf.Bytes())
	}
	return out
}

// BenchmarkFacesBesideIngest ingests the same photos of people twice with
// a real worker binary on 2 task slots, in the same run: once in a project
// without faces (the baseline) and once in a project that detects them,
// with the bundled sidecar beside it. It reports the time to all "ai" of
// each and their ratio (goal ≤ 1.5), the time until every photo's faces
// are in, the worker's CPU per photo in each, and the sidecar's CPU per
// photo over the baseline worker's (goal ≤ 0.5) and its peak memory.
// LIGHTBOX_BENCH_PHOTOS sets how many photos (2,000 by default).
func BenchmarkFacesBesideIngest(b *testing.B) {
	n := benchPhotos()
	bases := groupPhotos(b)
	photo := func(i int) []byte {
		return append(bytes.Clone(bases[i%len(bases)]), []byte(fmt.Sprintf("photo %d", i))...)
	}
	bin := testenv.Binary(b, "lightbox/cmd/worker")
	run := func(faces bool) (toAI, toFaces time.Duration, workerCPU, sidecarCPU time.Duration, sidecarPeak int64) {
		h := newHarness(b, nil)
		project := h.project()
		h.facesOn(project, faces)
		for i := range n {
			h.finalize(project, fmt.Sprintf("%04d.jpg", i), photo(i))
		}
		keyFile := filepath.Join(b.TempDir(), "chain.key")
		chain.GenerateKeyFile(keyFile)
		env := []string{"CLUSTER_DELAY=2s"}
		var svc *testenv.FaceService
		if faces {
			svc = testenv.StartFaces(b)
			env = append(env, "FACES_URL="+svc.Endpoint(), "FACES_SECRET="+svc.Secret)
		}
		var sidecarBefore time.Duration
		if svc != nil {
			sidecarBefore = procstat.CPU(svc.PID())
		}
		start := time.Now()
		cmd := h.startBinary(bin, keyFile, env...)
		testenv.Eventually(h.t, "all ai-ready", time.Hour, func() bool {
			return h.count(`SELECT count(*) FROM assets WHERE status IN ('ai', 'failed')`) == n
		})
		toAI = time.Since(start)
		if faces {
			testenv.Eventually(h.t, "every photo's faces", time.Hour, func() bool {
				return h.count(`SELECT count(*) FROM face_scans`) == n
			})
			toFaces = time.Since(start)
			sidecarCPU = procstat.CPU(svc.PID()) - sidecarBefore
			sidecarPeak = procstat.Memory(svc.PID(), "VmHWM")
		}
		workerCPU = procstat.CPU(cmd.Process.Pid)
		if failed := h.count(`SELECT count(*) FROM assets WHERE status = 'failed'`); failed > 0 {
			b.Fatalf("%d photos failed", failed)
		}
		return
	}
	per := func(d time.Duration) float64 { return d.Seconds() / float64(n) * 1000 }
	for range b.N {
		baseAI, _, baseCPU, _, _ := run(false)
		ai, all, cpu, sidecar, peak := run(true)
		b.ReportMetric(baseAI.Seconds(), "baseline_s_to_all_ai")
		b.ReportMetric(ai.Seconds(), "s_to_all_ai")
		b.ReportMetric(ai.Seconds()/baseAI.Seconds(), "ai_time_over_baseline")
		b.ReportMetric(all.Seconds(), "s_to_all_faces")
		b.ReportMetric(per(baseCPU), "baseline_worker_cpu_ms/photo")
		b.ReportMetric(per(cpu), "worker_cpu_ms/photo")
		b.ReportMetric(per(sidecar), "sidecar_cpu_ms/photo")
		b.ReportMetric((per(cpu)-per(baseCPU)+per(sidecar))/per(baseCPU), "faces_cpu_over_ingest")
		b.ReportMetric(float64(peak)/(1<<20), "sidecar_peak_MiB")
	}
}
