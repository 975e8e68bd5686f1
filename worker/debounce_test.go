package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"lightbox/testsupport/testenv"
)

func TestClusterDebounceSchedulesOneRunAndAnotherDuringIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	ctx := context.Background()
	st := h.env.Store

	scheduled := 0
	for range 50 {
		run, err := st.ScheduleCluster(ctx, project, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if run.New {
			scheduled++
			st.MarkClusterEnqueued(ctx, project, run.Run)
		}
		if run.Run != 1 {
			t.Fatalf("run %d while the first waits", run.Run)
		}
	}
	if scheduled != 1 {
		t.Fatalf("50 ready assets scheduled %d runs, want 1", scheduled)
	}
	if ok, _ := st.StartClusterRun(ctx, project, 1); !ok {
		t.Fatal("run 1 could not start")
	}
	// Assets that become ready while run 1 works schedule run 2.
	run, _ := st.ScheduleCluster(ctx, project, 30*time.Second)
	if !run.New || run.Run != 2 {
		t.Fatalf("during the run: %+v, want a new run 2", run)
	}
	st.MarkClusterEnqueued(ctx, project, 2)
	if again, _ := st.ScheduleCluster(ctx, project, 30*time.Second); again.New || again.Run != 2 {
		t.Fatalf("a second request during the run: %+v", again)
	}
	// A stale task of run 1 (say, a retry) does nothing now.
	if ok, _ := st.StartClusterRun(ctx, project, 1); ok {
		t.Fatal("a superseded run started again")
	}
	if ok, _ := st.StartClusterRun(ctx, project, 2); !ok {
		t.Fatal("run 2 could not start")
	}
}

func TestFiftyReadyAssetsMakeOneClusterTask(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1h", "WORKER_CONCURRENCY": "4"})
	project := h.project()
	small := readCorpus(t, "odd/orientation-1.jpg")
	for i := range 50 {
		h.finalize(project, fmt.Sprintf("%02d.jpg", i), append(append([]byte{}, small...), byte(i), byte(i>>8)))
	}
	h.run()
	testenv.Eventually(h.t, "50 assets to be search-ready", patience, func() bool {
		return h.count(`SELECT count(*) FROM assets WHERE status = 'search'`) == 50
	})
	q, err := h.in.GetQueueInfo("low")
	if err != nil || q.Scheduled != 1 {
		t.Fatalf("low queue: %+v %v, want exactly one scheduled cluster run", q, err)
	}
	tasks, _ := h.in.ListScheduledTasks("low")
	if err := h.in.RunTask("low", tasks[0].ID); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(h.t, "the run to make them ai-ready", patience, func() bool {
		return h.count(`SELECT count(*) FROM assets WHERE status = 'ai'`) == 50
	})
	// The identical copies form one duplicate group with one winner.
	if n := h.count(`SELECT count(*) FROM clusters WHERE kind = 'duplicate_group'`); n != 1 {
		t.Fatalf("%d duplicate groups of 50 copies, want 1", n)
	}
}

func TestRateLimitedEmbeddingDoesNotSpendRetries(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"embedding": []float32{1, 2, 3, 4}})
	}))
	defer provider.Close()
	h := newHarness(t, map[string]string{"EMBED_URL": provider.URL, "EMBED_MODEL": "test-model", "EMBED_DIM": "4", "CLUSTER_DELAY": "1h"})
	project := h.project()
	asset := h.finalize(project, "wood.jpg", readCorpus(t, "photos/wood.jpg"))
	h.run()
	// The handler makes the asset search-ready; the middleware records the
	// job's end after it returns, so wait for both.
	testenv.Eventually(h.t, "the asset to be search-ready and its embed job ended", patience, func() bool {
		return h.count(`SELECT count(*) FROM assets WHERE id = $1 AND status = 'search'`, asset) == 1 &&
			h.count(`SELECT count(*) FROM jobs WHERE asset_id = $1 AND type = 'asset:embed' AND status IN ('done', 'failed')`, asset) == 1
	})
	var job struct {
		Status  string `db:"status"`
		Attempt int    `db:"attempt"`
	}
	h.env.DB.Get(&job, `SELECT status, attempt FROM jobs WHERE asset_id = $1 AND type = 'asset:embed'`, asset)
	if calls.Load() != 2 || job.Status != "done" || job.Attempt != 1 {
		t.Fatalf("provider called %d times, embed job %+v: want 2 calls and done on attempt 1", calls.Load(), job)
	}
	var dim int
	h.env.DB.Get(&dim, `SELECT array_length(vector, 1) FROM embeddings WHERE asset_id = $1 AND model = 'test-model'`, asset)
	if dim != 4 {
		t.Fatalf("stored vector of %d numbers", dim)
	}
}
