package worker_test

import (
	"net/http"
	"testing"

	"lightbox/testsupport/procs"
	"lightbox/testsupport/testenv"
)

func TestWorkerMetricsCountTasksByTypeAndOutcome(t *testing.T) {
	t.Parallel()
	addr := procs.FreeAddr(t)
	const token = "worker-metrics-token-0123"
	h := newHarness(t, map[string]string{"METRICS_ADDR": addr, "METRICS_TOKEN": token, "CLUSTER_DELAY": "1h"})
	project := h.project()
	good := []string{"photos/wood.jpg", "photos/dune.jpg"}
	for _, name := range good {
		h.finalize(project, name, readCorpus(t, name))
	}
	h.finalize(project, "html-named.jpg", readCorpus(t, "bad/html-named.jpg"))
	h.run()
	url := "http://" + addr + "/metrics"
	status := 0
	testenv.Eventually(h.t, "the metrics listener", patience, func() bool {
		res, err := http.Get(url) // Run opens it in the background
		if err == nil {
			res.Body.Close()
			status = res.StatusCode
		}
		return err == nil
	})
	if status != http.StatusUnauthorized {
		t.Fatalf("scrape without the token: %d, want 401", status)
	}
	// The job row is written inside the run the metric times, so wait for
	// the metric itself.
	const runs = "lightbox_task_duration_seconds"
	done := map[string]string{"type": "asset:ingest", "outcome": "done"}
	failed := map[string]string{"type": "asset:ingest", "outcome": "failed"}
	var m testenv.Metrics
	testenv.Eventually(h.t, "two ingests done and one failed", patience, func() bool {
		m = testenv.Scrape(t, url, "Bearer "+token)
		return m.Value(runs, done) == 2 && m.Value(runs, failed) == 1
	})
	if m["go_goroutines"] == nil {
		t.Error("no runtime metrics")
	}
}
