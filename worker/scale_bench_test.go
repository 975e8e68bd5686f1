package worker_test

import (
	"context"
	"testing"
	"time"

	"lightbox/tasks"
	"lightbox/testsupport/seed"
)

// BenchmarkScaleCluster times one project:cluster run, through the worker's
// own handler, over a project of seed.Size assets (100,000 unless
// LIGHTBOX_SCALE_ASSETS says otherwise). Run it with -benchtime=1x.
func BenchmarkScaleCluster(b *testing.B) {
	h := newHarness(b, nil)
	project := h.project()
	start := time.Now()
	seed.Fill(b, h.env, project, seed.Size(b))
	seedSecs := time.Since(start).Seconds()
	ctx := context.Background()
	var secs []float64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		run, err := h.env.Store.ScheduleCluster(ctx, project, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := h.w.Handler().ProcessTask(ctx, tasks.NewTask(tasks.ClusterPayload{ProjectID: project, Run: run.Run})); err != nil {
			b.Fatal(err)
		}
		secs = append(secs, time.Since(start).Seconds())
	}
	b.StopTimer()
	if n := h.count(`SELECT count(*) FROM clusters WHERE project_id = $1`, project); n == 0 {
		b.Fatal("the run made no clusters")
	}
	b.ReportMetric(secs[len(secs)-1], "cluster_s")
	b.ReportMetric(float64(h.count(`SELECT count(*) FROM clusters WHERE project_id = $1 AND kind = 'duplicate_group'`, project)), "duplicate_groups")
	b.ReportMetric(seedSecs, "seed_s")
}
