package jobs_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"lightbox/jobs"
	"lightbox/store"
)

// TestSweepLooksForALostTaskOnceItsJobHasBeenQuietForReconcileAfter loses
// a job's task in Redis and sweeps at later and later clocks: the task is
// handed over again once the row has been quiet for ReconcileAfter, or
// for two minutes when it is not set.
func TestSweepLooksForALostTaskOnceItsJobHasBeenQuietForReconcileAfter(t *testing.T) {
	for _, c := range []struct {
		name  string
		after time.Duration // the setting
		quiet time.Duration // how quiet the row must be
	}{
		{"default", 0, 2 * time.Minute},
		{"set", 10 * time.Second, 10 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 0)
			ctx := context.Background()
			tr := h.d.Tracker(jobs.TrackerConfig{Log: slog.Default(), ReconcileAfter: c.after})
			t.Cleanup(tr.Close)
			j := h.exportJob()
			h.d.Enqueue(ctx, slog.Default(), []store.Job{j})
			if err := h.inspector.DeleteTask(j.Queue, j.TaskID); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := tr.Sweep(ctx, start.Add(c.quiet-2*time.Second)); err != nil {
				t.Fatal(err)
			}
			if h.inQueue(j) {
				t.Fatalf("the task was handed over again before its job had been quiet for %v", c.quiet)
			}
			if err := tr.Sweep(ctx, start.Add(c.quiet+2*time.Second)); err != nil {
				t.Fatal(err)
			}
			if !h.inQueue(j) {
				t.Fatalf("the task was not handed over again once its job had been quiet for %v", c.quiet)
			}
		})
	}
}
