package server_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"lightbox/testsupport/testenv"
)

func TestMetricsNeedAnAdminOrTheToken(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{"METRICS_TOKEN": testMetricsToken}})
	admin := a.user("root@example.org", true)
	ana := a.user("ana@example.org", false)

	expect(t, a.do("GET", "/metrics", "", nil), 401, "unauthenticated")
	expect(t, a.do("GET", "/metrics", "not-the-token", nil), 401, "invalid_credentials")
	expect(t, a.do("GET", "/metrics", ana, nil), 403, "forbidden")
	testenv.Scrape(t, a.url+"/metrics", "Bearer "+testMetricsToken)
	testenv.Scrape(t, a.url+"/metrics", "Bearer "+admin)
}

func TestMetricsMoveWithRealWork(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{
		"METRICS_TOKEN": testMetricsToken, "RATE_UPLOADS_BURST": "10", "RATE_UPLOADS_PER_MINUTE": "600",
	}})
	scrape := func() testenv.Metrics { return testenv.Scrape(t, a.url+"/metrics", "Bearer "+testMetricsToken) }
	key := a.user("ana@example.org", false)
	project := a.newProject(key)

	fin, _ := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))
	expect(t, fin, 200, "")
	// Eleven files at once is more than the burst of ten.
	files := make([]map[string]any, 11)
	for i := range files {
		files[i] = map[string]any{"filename": "a.jpg", "byteSize": 100}
	}
	expect(t, a.do("POST", "/v1/projects/"+project+"/assets:prepareUpload", key, map[string]any{"files": files}), 429, "rate_limited")
	stream := a.openStream("/v1/realtime?projectId="+project, "Authorization", "Bearer "+key)
	if stream.res.StatusCode != 200 {
		t.Fatalf("stream status %d", stream.res.StatusCode)
	}

	m := scrape()
	if n := m.Value("asynq_queue_size", map[string]string{"queue": "default"}); n < 2 {
		t.Fatalf("asynq_queue_size{queue=default} = %v before any worker, want the 2 ingests", n)
	}
	if m["asynq_queue_latency_seconds"] == nil {
		t.Fatal("no asynq_queue_latency_seconds")
	}
	requests := "lightbox_http_request_duration_seconds"
	if n := m.Value(requests, map[string]string{"method": "POST", "route": "/v1/projects", "status": "201"}); n != 1 {
		t.Fatalf("POST /v1/projects 201 counted %v times, want 1", n)
	}
	// Each action is its own route, though one Gin route dispatches them.
	if n := m.Value(requests, map[string]string{"method": "POST", "route": "/v1/projects/:id/assets:prepareUpload", "status": "200"}); n != 1 {
		t.Fatalf("POST /v1/projects/:id/assets:prepareUpload 200 counted %v times, want 1", n)
	}
	if n := m.Value(requests, map[string]string{"method": "PUT", "route": "/blobs/*key", "status": "201"}); n != 2 {
		t.Fatalf("PUT /blobs/*key 201 counted %v times, want 2", n)
	}
	for _, route := range m.LabelValues(requests, "route") {
		if strings.Contains(route, project) {
			t.Fatalf("route label %q holds an id, not the route template", route)
		}
	}
	if n := m.Value("lightbox_rate_limit_refusals_total", map[string]string{"limit": "uploads"}); n != 1 {
		t.Fatalf("upload refusals %v, want 1", n)
	}
	if n := m.Value("lightbox_sse_connections", nil); n != 1 {
		t.Fatalf("lightbox_sse_connections %v, want 1", n)
	}
	if m["lightbox_chain_pending_attestations"] == nil || m["go_goroutines"] == nil {
		t.Fatal("no chain lag or runtime metrics")
	}
	for name := range m {
		for _, l := range m[name].GetMetric() {
			for _, p := range l.GetLabel() {
				if strings.Contains(p.GetValue(), "@example.org") || p.GetName() == "user" || p.GetName() == "userId" {
					t.Fatalf("%s has a per-user label %s=%q", name, p.GetName(), p.GetValue())
				}
			}
		}
	}

	// A worker drains the queue; Asynq's counters move.
	w := a.startWorker()
	testenv.Eventually(t, "the default queue to be drained, with 2 tasks processed", 5*time.Minute, func() bool {
		m = scrape()
		return m.Value("asynq_queue_size", map[string]string{"queue": "default"}) == 0 &&
			m.Value("asynq_tasks_processed_total", map[string]string{"queue": "default"}) >= 2
	})
	// Every metric the dashboard queries is one the server or the worker
	// exports, so the two cannot drift apart.
	workerScrape := httptest.NewServer(w.MetricsHandler())
	defer workerScrape.Close()
	wm := testenv.Scrape(t, workerScrape.URL, "Bearer "+testMetricsToken)
	for _, name := range dashboardMetrics(t, "../deploy/grafana/lightbox.json") {
		if !m.Has(name) && !wm.Has(name) {
			t.Errorf("the dashboard queries %s, which neither the server nor the worker exports", name)
		}
	}

	stream.cancel()
	testenv.Eventually(t, "the closed stream to be no longer counted", 5*time.Minute, func() bool {
		return scrape().Value("lightbox_sse_connections", nil) == 0
	})
}

// dashboardMetrics lists the metric names a Grafana dashboard's queries use:
// every name with one of Lightbox's or Asynq's prefixes.
func dashboardMetrics(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		SchemaVersion int                           `json:"schemaVersion"`
		Inputs        []struct{ Name, Type string } `json:"__inputs"`
		Panels        []struct {
			Type    string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if d.SchemaVersion < 39 || len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" {
		t.Fatalf("%s: schema %d, inputs %v; want 39 and DS_PROMETHEUS", path, d.SchemaVersion, d.Inputs)
	}
	names := map[string]bool{}
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("%s: a %s panel has no query", path, p.Type)
		}
		for _, q := range p.Targets {
			for _, n := range metricName.FindAllString(q.Expr, -1) {
				names[n] = true
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s: no metric names in its queries", path)
	}
	return slices.Sorted(maps.Keys(names))
}

var metricName = regexp.MustCompile(`\b(lightbox|asynq)_[a-z_]+`)

// The scheduled backups' metrics are read from their runs at each
// scrape: nothing but the failures' 0 before any run, then the last
// success's time, size and duration, and the count of failures.
func TestBackupMetrics(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{"METRICS_TOKEN": testMetricsToken}})
	scrape := func() testenv.Metrics { return testenv.Scrape(t, a.url+"/metrics", "Bearer "+testMetricsToken) }
	m := scrape()
	if m["lightbox_backup_last_success_timestamp_seconds"] != nil || m.Value("lightbox_backup_failures_total", nil) != 0 {
		t.Fatal("backup metrics before any backup ran")
	}

	ctx := context.Background()
	before := time.Now()
	run, _, err := env.Store.StartBackupRun(ctx, "/mnt/backups")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.FinishBackupRun(ctx, run, "20261130T030000Z", 123456, 7, ""); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		failed, _, err := env.Store.StartBackupRun(ctx, "/mnt/backups")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Store.FailBackupRun(ctx, failed, "the backup target /mnt/backups is full"); err != nil {
			t.Fatal(err)
		}
	}
	m = scrape()
	if at := m.Value("lightbox_backup_last_success_timestamp_seconds", nil); at < float64(before.Add(-time.Minute).Unix()) {
		t.Errorf("last success at %v, want after %v", at, before.Unix())
	}
	if n := m.Value("lightbox_backup_last_success_bytes", nil); n != 123456 {
		t.Errorf("last success's size %v, want 123456", n)
	}
	if d := m.Value("lightbox_backup_last_success_duration_seconds", nil); d < 0 || d > 3600 {
		t.Errorf("last success's duration %v", d)
	}
	if n := m.Value("lightbox_backup_failures_total", nil); n != 2 {
		t.Errorf("failures %v, want 2", n)
	}
}
