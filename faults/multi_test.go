package faults_test

import (
	"testing"
	"time"

	"lightbox/testsupport/procs"
	"lightbox/testsupport/testenv"
)

// ingestsDone is how many ingests a worker finished, by its own metrics.
func ingestsDone(t testing.TB, w *procs.Proc) float64 {
	t.Helper()
	return testenv.Scrape(t, w.URL+"/metrics", "").Value("lightbox_task_duration_seconds",
		map[string]string{"type": "asset:ingest", "outcome": "done"})
}

// TestManyMachines runs two servers and two workers that share only
// Postgres, Redis and the bucket: photos uploaded through server A are
// announced on server B's stream, ingested by both workers, and readable
// through either server. Then one worker is killed mid-batch and the
// other finishes the batch.
func TestManyMachines(t *testing.T) {
	t.Parallel()
	n := 40
	if long {
		n = 200
	}
	env := testenv.New(t)
	stack := procs.NewStack(t, env.DSN, env.RedisURL)
	a, b := stack.AddServer(nil), stack.AddServer(nil)
	w1, w2 := stack.AddWorker(nil), stack.AddWorker(nil)
	key, project := user(t, env.Store)
	events := watch(t, b.URL, key, project)

	ps := photos(t, n)
	start := time.Now()
	ids, _, err := uploadAll([]string{a.URL}, key, project, ps)
	if err != nil {
		t.Fatal(err)
	}
	settle(t, env.DB, "none (two of each)", project, ps, start)
	testenv.Eventually(t, "server B's stream to name every asset", patience, func() bool { return events.saw(ids) == 0 })
	if d1, d2 := ingestsDone(t, w1), ingestsDone(t, w2); d1 == 0 || d2 == 0 || int(d1+d2) < n {
		t.Errorf("ingests done: worker 1 %v, worker 2 %v; want both working, %d in all", d1, d2, n)
	}
	for _, id := range ids {
		for _, s := range []*procs.Proc{a, b} {
			if err := readFiles(s.URL, key, id); err != nil {
				t.Errorf("through %s: %v", s.Name, err)
			}
		}
	}

	// A second batch; worker 1 dies once it has taken some of it.
	before := ingestsDone(t, w1)
	more := photos(t, n/2)
	uploaded := make(chan error, 1)
	go func() {
		_, _, err := uploadAll([]string{a.URL, b.URL}, key, project, more)
		uploaded <- err
	}()
	testenv.Eventually(t, "worker 1 to take part of the second batch", patience, func() bool { return ingestsDone(t, w1) > before })
	w1.Kill()
	killed := time.Now()
	done2 := ingestsDone(t, w2)
	all := append(ps, more...)
	if err := <-uploaded; err != nil {
		t.Fatal(err)
	}
	r := settle(t, env.DB, "kill -9 one of two workers", project, all, killed)
	if ingestsDone(t, w2) == done2 {
		t.Error("worker 2 did none of the second batch")
	}
	t.Logf("worker 1 killed mid-batch; worker 2 finished it in %v (%d jobs ran again)", r.Recover.Round(time.Second), r.Rerun)
}
