package server_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// TestQueuesAreListedAgainOneSweepAfterRedisLosesItsData empties the
// test's Redis database, as a FLUSHALL or a restart without persistence
// would, then uploads: Asynq's client names a queue in the registry only
// on its first enqueue in a process's life, so the server's own enqueue
// lists nothing, and Asynqmon and /metrics show no queue. One sweep of a
// worker that was running all along lists every queue again.
func TestQueuesAreListedAgainOneSweepAfterRedisLosesItsData(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	w := a.newWorker(a.blobs)
	admin := a.user("root@example.org", true)
	project := a.newProject(admin)

	listed := func() []string {
		t.Helper()
		r := a.do("GET", "/admin/queues/api/queues", admin, nil)
		expect(t, r, 200, "")
		var ans struct {
			Queues []struct {
				Queue string `json:"queue"`
			} `json:"queues"`
		}
		if err := json.Unmarshal(r.body, &ans); err != nil {
			t.Fatalf("Asynqmon's queue list: %v: %s", err, r.body)
		}
		var names []string
		for _, q := range ans.Queues {
			names = append(names, q.Queue)
		}
		slices.Sort(names)
		return names
	}
	sized := func() []string {
		t.Helper()
		got := testenv.Scrape(t, a.url+"/metrics", "Bearer "+admin).LabelValues("asynq_queue_size", "queue")
		slices.Sort(got)
		return got
	}
	sweep := func() {
		t.Helper()
		if err := w.Handler().ProcessTask(context.Background(), tasks.NewSweep()); err != nil {
			t.Fatal(err)
		}
	}

	a.uploadAll(admin, project, corpus(t, "photos/wood.jpg"))
	if got := listed(); !slices.Contains(got, "default") {
		t.Fatalf("before the loss Asynqmon lists %v, without the queue of the upload", got)
	}

	if err := a.env.Redis.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	a.uploadAll(admin, project, corpus(t, "photos/dune.jpg"))
	if got := listed(); len(got) != 0 {
		t.Fatalf("right after the loss and an upload Asynqmon lists %v; the setup no longer shows the fault", got)
	}

	sweep()
	all := slices.Sorted(maps.Keys(a.cfg.QueueWeights))
	if got := listed(); !slices.Equal(got, all) {
		t.Errorf("one sweep after Redis lost its data, Asynqmon lists %v, want %v", got, all)
	}
	if got := sized(); !slices.Equal(got, all) {
		t.Errorf("one sweep after Redis lost its data, /metrics has asynq_queue_size for %v, want %v", got, all)
	}
}
