package jobs_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// tracker is a Tracker as a worker builds it (worker.New) with the
// default settings: it serves every queue, and compares a job with its
// task once its row has been quiet for the default SWEEP_RECONCILE_AFTER.
func (h *harness) tracker() *jobs.Tracker {
	h.t.Helper()
	tr := h.d.Tracker(jobs.TrackerConfig{Log: slog.Default(), Queues: slices.Sorted(maps.Keys(tasks.DefaultWeights)),
		ReconcileAfter: 2 * time.Minute})
	h.t.Cleanup(tr.Close)
	return tr
}

// sweep runs tr's sweep now, as a worker's periodic sweep task does.
func (h *harness) sweep(tr *jobs.Tracker) {
	h.t.Helper()
	if err := tr.Sweep(context.Background(), time.Now()); err != nil {
		h.t.Fatal(err)
	}
}

// finalizeNamed records an uploaded file called name in the harness's
// project, its asset and its ingest job, the way finalize does, then
// stops: as if Redis refused the enqueue.
func (h *harness) finalizeNamed(name string, data []byte) (asset, job uuid.UUID) {
	h.t.Helper()
	owner, err := h.env.Store.ProjectOwner(context.Background(), h.project)
	if err != nil {
		h.t.Fatal(err)
	}
	asset = uuid.New()
	key := "originals/" + h.project.String() + "/" + asset.String()
	res := h.env.Finalize(h.t, owner, h.project, testenv.Upload{ID: asset, Filename: name, Data: data, BlobKey: key})
	if len(res.Accepted) != 1 {
		h.t.Fatalf("finalize of %s accepted %d assets, want 1: %+v", name, len(res.Accepted), res.Assets)
	}
	return asset, res.Jobs[0]
}

// scheduleClusterRun schedules a cluster run of the harness's project that
// was due a minute ago and lets tr's sweep enqueue it, and returns its
// task's id.
func (h *harness) scheduleClusterRun(tr *jobs.Tracker) string {
	h.t.Helper()
	run, err := h.env.Store.ScheduleCluster(context.Background(), h.project, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	h.env.Age(h.t, "cluster_runs", "scheduled_for", time.Minute, "project_id = $1", h.project)
	h.sweep(tr)
	id := tasks.ClusterPayload{ProjectID: h.project, Run: run.Run}.TaskID()
	if _, err := h.inspector.GetTaskInfo(tasks.QueueLow, id); err != nil {
		h.t.Fatalf("cluster run of %s not enqueued: %v", h.project, err)
	}
	return id
}

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

func TestSweepEnqueuesWorkWhoseEnqueueWasLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	tr := h.tracker()
	asset, job := h.finalizeNamed("a.jpg", []byte("jpeg bytes"))

	// Fresh work is left alone: finalize may still be enqueueing it.
	h.sweep(tr)
	if _, err := h.inspector.GetTaskInfo(tasks.QueueDefault, tasks.IngestID(asset)); err == nil {
		t.Fatal("sweep enqueued fresh work")
	}

	h.env.Age(t, "jobs", "created_at", time.Minute, "")
	h.sweep(tr)
	info, err := h.inspector.GetTaskInfo(tasks.QueueDefault, tasks.IngestID(asset))
	if err != nil {
		t.Fatalf("lost ingest not enqueued: %v", err)
	}
	p, _ := tasks.Decode[tasks.IngestPayload](asynq.NewTask(info.Type, info.Payload))
	if p.JobID != job || p.AssetID != asset {
		t.Fatalf("payload %+v", p)
	}
	if n := h.env.Count(t, "SELECT count(*) FROM jobs WHERE enqueued_at IS NOT NULL"); n != 1 {
		t.Fatalf("%d jobs marked enqueued", n)
	}

	// Sweeping again changes nothing: still one task.
	h.sweep(tr)
	if q, _ := h.inspector.GetQueueInfo(tasks.QueueDefault); q.Size != 1 {
		t.Fatalf("default queue has %d tasks after a second sweep", q.Size)
	}
}

func TestSweepPutsBackTasksRedisLostOrAnOutageArchived(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	tr := h.tracker()
	lost, _ := h.finalizeNamed("a.jpg", []byte("other bytes"))
	archived, _ := h.finalizeNamed("b.jpg", []byte("more bytes"))
	h.env.Age(t, "jobs", "created_at", time.Minute, "")
	h.sweep(tr)

	// Redis loses one task (a restart without persistence); Postgres is
	// down for longer than the other's retries, so Asynq archives it.
	if err := h.inspector.DeleteTask(tasks.QueueDefault, tasks.IngestID(lost)); err != nil {
		t.Fatal(err)
	}
	if err := h.inspector.ArchiveTask(tasks.QueueDefault, tasks.IngestID(archived)); err != nil {
		t.Fatal(err)
	}
	h.sweep(tr)
	if _, err := h.inspector.GetTaskInfo(tasks.QueueDefault, tasks.IngestID(lost)); err == nil {
		t.Fatal("a recently updated job was re-enqueued")
	}
	h.env.Age(t, "jobs", "updated_at", 3*time.Minute, "")
	h.sweep(tr)
	for _, asset := range []uuid.UUID{lost, archived} {
		info, err := h.inspector.GetTaskInfo(tasks.QueueDefault, tasks.IngestID(asset))
		if err != nil || info.State != asynq.TaskStatePending {
			t.Fatalf("ingest of %s not put back: %v %v", asset, info, err)
		}
	}
}

func TestSweepPutsBackEveryJobAfterRedisLosesEverything(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	tr := h.tracker()
	a, _ := h.finalizeNamed("a.jpg", []byte("a bytes"))
	b, _ := h.finalizeNamed("b.jpg", []byte("b bytes"))
	h.env.Age(t, "jobs", "created_at", time.Minute, "")
	h.sweep(tr)
	if err := h.env.Redis.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	h.env.Age(t, "jobs", "updated_at", 3*time.Minute, "")
	h.sweep(tr)
	for _, asset := range []uuid.UUID{a, b} {
		if _, err := h.inspector.GetTaskInfo(tasks.QueueDefault, tasks.IngestID(asset)); err != nil {
			t.Fatalf("ingest of %s not put back: %v", asset, err)
		}
	}
	if n := h.env.Count(t, "SELECT count(*) FROM jobs WHERE enqueued_at IS NULL"); n != 0 {
		t.Fatalf("%d jobs left as never enqueued", n)
	}
}

// TestSweepPutsBackLostJobsAtOnceAfterRedisLosesEverything: a queue
// missing from Asynq's registry tells the sweep that Redis lost its data,
// so it puts back jobs whose rows were quiet for seconds, not minutes.
// A job recorded as running waits until live workers have had time to
// list what they run, then goes back too.
func TestSweepPutsBackLostJobsAtOnceAfterRedisLosesEverything(t *testing.T) {
	t.Parallel()
	// patience bounds the wait for live workers' lists to settle (seconds
	// on a quiet machine); it only catches a hang on busy cores.
	const patience = 5 * time.Minute
	h := newHarness(t, 0)
	tr := h.tracker()
	waiting, _ := h.finalizeNamed("a.jpg", []byte("a bytes"))
	running, runningJob := h.finalizeNamed("b.jpg", []byte("b bytes"))
	h.env.Age(t, "jobs", "created_at", time.Minute, "")
	h.sweep(tr)
	if err := h.env.Redis.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	// Both were enqueued a little while ago; one had started.
	h.env.Age(t, "jobs", "updated_at", 10*time.Second, "")
	h.env.SetJobs(t, testenv.JobRow{Status: store.JobRunning, Attempt: 1}, "id = $1", runningJob)

	h.sweep(tr)
	if _, err := h.inspector.GetTaskInfo(tasks.QueueDefault, tasks.IngestID(waiting)); err != nil {
		t.Fatalf("one sweep after Redis lost everything, the waiting ingest is not back: %v", err)
	}
	if _, err := h.inspector.GetTaskInfo(tasks.QueueDefault, tasks.IngestID(running)); err == nil {
		t.Fatal("a job recorded as running went back before live workers could say they run it")
	}
	testenv.Eventually(h.t, "the running job's task to come back once no live worker lists it", patience, func() bool {
		h.sweep(tr)
		_, err := h.inspector.GetTaskInfo(tasks.QueueDefault, tasks.IngestID(running))
		return err == nil
	})
}

// A cluster run that started and then failed through its retries was
// archived with its run marked started, not due: nothing found it again,
// and the project's photos never reached 'ai'. Once past its timeout, the
// sweep runs it again.
func TestSweepRunsAgainAClusterRunThatFailedAfterItStarted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	ctx := context.Background()
	tr := h.tracker()
	id := h.scheduleClusterRun(tr)
	if ok, err := h.env.Store.StartClusterRun(ctx, h.project, 1); !ok || err != nil {
		t.Fatalf("start: %v %v", ok, err)
	}
	if err := h.inspector.ArchiveTask(tasks.QueueLow, id); err != nil {
		t.Fatal(err)
	}
	h.sweep(tr)
	if info, _ := h.inspector.GetTaskInfo(tasks.QueueLow, id); info == nil || info.State != asynq.TaskStateArchived {
		t.Fatalf("a run started just now was touched: %v", info)
	}
	h.env.Age(t, "cluster_runs", "started_at", 20*time.Minute, "project_id = $1", h.project)
	h.sweep(tr)
	if info, err := h.inspector.GetTaskInfo(tasks.QueueLow, id); err != nil || info.State != asynq.TaskStatePending {
		t.Fatalf("a run stuck since it started was not run again: %v %v", info, err)
	}
}

func TestSweepPutsBackClusterRunsAfterRedisLosesEverything(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	tr := h.tracker()
	id := h.scheduleClusterRun(tr)
	if err := h.env.Redis.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	h.env.Age(t, "cluster_runs", "scheduled_for", 3*time.Minute, "")
	h.sweep(tr)
	// The Inspector finds it only if the sweep announced the queue again.
	if _, err := h.inspector.GetTaskInfo(tasks.QueueLow, id); err != nil {
		t.Fatalf("cluster run not put back: %v", err)
	}
}
