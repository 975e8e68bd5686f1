package jobs_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

type harness struct {
	t         *testing.T
	env       *testenv.Env
	d         *jobs.Dispatcher
	inspector *asynq.Inspector
	project   uuid.UUID
}

func newHarness(t *testing.T, batchCap int) *harness {
	t.Helper()
	env := testenv.New(t)
	opt, err := asynq.ParseRedisURI(env.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	client, inspector := asynq.NewClient(opt), asynq.NewInspector(opt)
	t.Cleanup(func() { client.Close(); inspector.Close() })
	ctx := context.Background()
	u, err := env.Store.CreateUser(ctx, "ana@example.org", false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := env.Store.CreateProject(ctx, u.ID, "Shoot", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := jobs.New(jobs.Config{Store: env.Store, Queue: client, Inspector: inspector, Redis: env.Redis, QueueRedis: opt, Caps: store.QueueCaps{Batch: batchCap}})
	return &harness{t: t, env: env, d: d, inspector: inspector, project: p.ID}
}

// exportJob records a job that belongs to no asset, like an export's.
// Recorded through the test's own Store, it is not handed over.
func (h *harness) exportJob() store.Job {
	h.t.Helper()
	j, err := jobs.Insert(context.Background(), h.env.Store, tasks.ExportPayload{Job: tasks.NewJob(h.project), ExportID: uuid.New()})
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

// importJobs records a URL import of n files: one batch of n download jobs.
func (h *harness) importJobs(n int) []store.Job {
	h.t.Helper()
	items := make([]store.NewImport, n)
	for i := range items {
		id := uuid.New()
		items[i] = store.NewImport{AssetID: id, URL: "https://example.org/a.jpg", Filename: "a.jpg", BlobKey: "originals/" + id.String()}
	}
	owner, err := h.env.Store.ProjectOwner(context.Background(), h.project)
	if err != nil {
		h.t.Fatal(err)
	}
	downloads := make([]tasks.JobArgs, n)
	for i, it := range items {
		downloads[i] = tasks.DownloadPayload{Job: tasks.NewJob(h.project), AssetID: it.AssetID, URL: it.URL}
	}
	var recorded []store.Job
	err = h.env.Store.WithTx(context.Background(), func(tx *store.Store) error {
		if err := tx.AddImports(context.Background(), h.project, items); err != nil {
			return err
		}
		recorded, err = jobs.InsertMany(context.Background(), tx, downloads, jobs.NewBatch(owner, store.BatchImport))
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return recorded
}

func (h *harness) state(j store.Job) asynq.TaskState {
	h.t.Helper()
	info, err := h.inspector.GetTaskInfo(j.Queue, j.TaskID)
	if err != nil {
		h.t.Fatalf("task %s: %v", j.TaskID, err)
	}
	return info.State
}

func TestInsertRecordsTheRowOfTheTaskTable(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	asset := h.env.Upload(t, h.project, testenv.Files(1)...)[0]
	owner, err := h.env.Store.ProjectOwner(ctx, h.project)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []tasks.JobArgs{
		tasks.IngestPayload{Job: tasks.NewJob(h.project), AssetID: asset},
		tasks.DownloadPayload{Job: tasks.NewJob(h.project), AssetID: asset, URL: "https://example.org/a.jpg"},
		tasks.EmbedPayload{Job: tasks.NewJob(h.project), AssetID: asset, Model: "m"},
		tasks.ExportPayload{Job: tasks.NewJob(h.project), ExportID: asset},
	} {
		j, err := jobs.Insert(ctx, h.env.Store, a, jobs.NewBatch(owner, store.BatchUpload))
		if err != nil {
			t.Fatal(err)
		}
		task := tasks.NewTask(a)
		var recorded, sent any
		json.Unmarshal(j.Payload, &recorded)
		json.Unmarshal(task.Payload(), &sent)
		if !tasks.HasJob(j.Type) || j.Type != task.Type() || !reflect.DeepEqual(recorded, sent) {
			t.Errorf("%s: row %+v does not record task %s %s", a.Kind(), j, task.Type(), task.Payload())
		}
		_, aboutAsset := a.(tasks.AssetArgs)
		if j.ID != a.Ref().JobID || j.ProjectID != h.project || (j.AssetID != nil) != aboutAsset || j.BatchID == nil ||
			j.Queue != tasks.QueueOf(a.Kind()) || j.TaskID != a.TaskID() || j.TaskID == "" || j.Status != store.JobQueued {
			t.Errorf("%s: row %+v", a.Kind(), j)
		}
		if aboutAsset && *j.AssetID != asset {
			t.Errorf("%s: row names asset %s, not %s", a.Kind(), j.AssetID, asset)
		}
		b, err := h.env.Store.Batch(ctx, owner, *j.BatchID)
		if err != nil || b.Total != 1 || b.Kind != store.BatchUpload {
			t.Errorf("%s: batch %+v (%v), want an upload batch of 1", a.Kind(), b, err)
		}
	}
	if tasks.HasJob(tasks.TypeCluster) || tasks.HasJob(tasks.TypeSweep) || tasks.HasJob(tasks.TypeChainFlush) {
		t.Error("a task type without job rows claims to have them")
	}
	if !tasks.FailsAsset(tasks.TypeIngest) || tasks.FailsAsset(tasks.TypeEmbed) {
		t.Error("only the tasks an asset cannot do without fail it")
	}
}

func TestEnqueueHandsOverEachBatchUpToItsCap(t *testing.T) {
	h := newHarness(t, 2)
	ctx := context.Background()
	recorded := h.importJobs(3)
	lone := h.exportJob()
	if n := h.d.Enqueue(ctx, slog.Default(), append(recorded, lone)); n != 3 {
		t.Fatalf("enqueued %d, want 2 of the batch and the job outside it", n)
	}
	queued, marked := 0, 0
	for _, j := range append(recorded, lone) {
		_, err := h.inspector.GetTaskInfo(j.Queue, j.TaskID)
		got, err2 := h.env.Store.JobByID(ctx, j.ID)
		if err2 != nil {
			t.Fatal(err2)
		}
		if (err == nil) != (got.EnqueuedAt != nil) {
			t.Errorf("job %s: in the queue %v (err %v), marked enqueued %v", j.ID, err == nil, err, got.EnqueuedAt != nil)
		}
		if err == nil {
			queued++
		}
		if got.EnqueuedAt != nil {
			marked++
		}
	}
	if !h.inQueue(lone) || queued != 3 || marked != 3 {
		t.Errorf("in the queue: %d, marked: %d, the lone job: %v; want the batch's cap of 2 and the lone job", queued, marked, h.inQueue(lone))
	}
	// Enqueueing again is harmless: the job was handed over already.
	if n := h.d.Enqueue(ctx, slog.Default(), []store.Job{lone}); n != 0 || !h.inQueue(lone) {
		t.Fatalf("a second enqueue of a waiting task counted %d, its task in the queue: %v", n, h.inQueue(lone))
	}
}

func TestRerunRunsAnArchivedTaskAgain(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	archived, gone := h.exportJob(), h.exportJob()
	h.d.Enqueue(ctx, slog.Default(), []store.Job{archived})
	if err := h.inspector.ArchiveTask(archived.Queue, archived.TaskID); err != nil {
		t.Fatal(err)
	}
	for _, j := range []store.Job{archived, gone} {
		if _, _, err := h.env.Store.JobFinished(ctx, j.ID, store.JobFailed, "task_failed", "boom"); err != nil {
			t.Fatal(err)
		}
	}
	retried, _, err := h.d.Rerun(ctx, slog.Default(), []store.Job{archived, gone})
	if err != nil || len(retried) != 2 {
		t.Fatalf("rerun: %v, %v", retried, err)
	}
	for _, j := range []store.Job{archived, gone} {
		if s := h.state(j); s != asynq.TaskStatePending {
			t.Errorf("task %s is %s, want pending", j.TaskID, s)
		}
		got, err := h.env.Store.JobByID(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.JobQueued || got.ErrorCode != nil || got.EnqueuedAt == nil {
			t.Errorf("job after rerun: status %s, error %v, enqueued %v", got.Status, got.ErrorCode, got.EnqueuedAt)
		}
	}
}

// A job's task can end before its row says so (the worker writes states a
// few ms later), while an admission that read the row as waiting enqueues it
// again: its own ended task must not run again for that.
func TestEnqueueLeavesAJobsOwnEndedTask(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	failed := h.exportJob()
	h.d.Enqueue(ctx, slog.Default(), []store.Job{failed})
	if err := h.inspector.ArchiveTask(failed.Queue, failed.TaskID); err != nil {
		t.Fatal(err)
	}
	h.d.Enqueue(ctx, slog.Default(), []store.Job{failed})
	if s := h.state(failed); s != asynq.TaskStateArchived {
		t.Errorf("the ended task is %s after an enqueue of its job, want archived", s)
	}
}

// Two callers that read the same waiting job (a worker filling freed
// room, the sweep) both hand it over. The first copy has run and Asynq let
// go of its TaskID by the time the second arrives: the job is sent once.
func TestAJobHandedOverTwiceAtOnceRunsOnce(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	j := h.exportJob()
	if n := h.d.Enqueue(ctx, slog.Default(), []store.Job{j}); n != 1 {
		t.Fatalf("the first caller handed over %d jobs, want 1", n)
	}
	if err := h.inspector.DeleteTask(j.Queue, j.TaskID); err != nil { // ran, and was let go
		t.Fatal(err)
	}
	if n := h.d.Enqueue(ctx, slog.Default(), []store.Job{j}); n != 0 {
		t.Errorf("the second caller handed over %d jobs, want 0", n)
	}
	if info, err := h.inspector.GetTaskInfo(j.Queue, j.TaskID); err == nil {
		t.Errorf("the job's task is in the queue again (%s): it would run twice", info.State)
	}
}

func TestDropRemovesWaitingTasks(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	waiting, never := h.exportJob(), h.exportJob()
	h.d.Enqueue(ctx, slog.Default(), []store.Job{waiting})
	h.d.Drop(slog.Default(), []store.Job{waiting, never})
	for _, j := range []store.Job{waiting, never} {
		if _, err := h.inspector.GetTaskInfo(j.Queue, j.TaskID); err == nil {
			t.Errorf("task %s is still in the queue", j.TaskID)
		}
	}
}

// A chain flush that ran out of retries stays archived under its fixed
// TaskID, where no enqueue replaces it; asking for a flush runs it again,
// or else pending attestations would wait for good.
func TestArchivedChainFlushRunsAgain(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	state := func() asynq.TaskState {
		t.Helper()
		info, err := h.inspector.GetTaskInfo(tasks.QueueLow, tasks.ChainFlushID)
		if err != nil {
			t.Fatal(err)
		}
		return info.State
	}
	if err := h.d.FlushChain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.d.FlushChain(ctx); err != nil || state() != asynq.TaskStatePending {
		t.Fatalf("a second flush while one waits: %v, state %v; want no error and the one pending", err, state())
	}
	if err := h.inspector.ArchiveTask(tasks.QueueLow, tasks.ChainFlushID); err != nil {
		t.Fatal(err)
	}
	if err := h.d.FlushChain(ctx); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != asynq.TaskStatePending {
		t.Fatalf("the archived flush is %v after asking for a flush, want pending", s)
	}
}

// Two jobs can share a TaskID: an edit applied again over its latest
// version renders it again as a new job. When the first job's task failed
// for good, its archived task must make room for the second's, or the
// second would never run and reconciling it would run the first again.
func TestAJobSharingAnArchivedTasksIDRuns(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	edit, asset := uuid.New(), h.env.Upload(t, h.project, testenv.Files(1)...)[0]
	job := func() store.Job {
		t.Helper()
		j, err := jobs.Insert(ctx, h.env.Store, tasks.EditPayload{Job: tasks.NewJob(h.project), AssetID: asset, EditID: edit})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	owner := func(j store.Job) (uuid.UUID, asynq.TaskState) {
		t.Helper()
		info, err := h.inspector.GetTaskInfo(j.Queue, j.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tasks.Decode[tasks.EditPayload](asynq.NewTask(info.Type, info.Payload))
		if err != nil {
			t.Fatal(err)
		}
		return p.JobID, info.State
	}

	first := job()
	h.d.Enqueue(ctx, slog.Default(), []store.Job{first})
	if n := h.d.Enqueue(ctx, slog.Default(), []store.Job{first}); n != 0 {
		t.Fatalf("enqueueing a job again: %d arrived, want 0 (it was handed over)", n)
	}
	if id, _ := owner(first); id != first.ID {
		t.Fatalf("enqueueing a job again replaced its task: job %s, want %s", id, first.ID)
	}
	if err := h.inspector.ArchiveTask(first.Queue, first.TaskID); err != nil {
		t.Fatal(err)
	}
	h.env.FailJob(t, first.ID, 4, "corrupt_image")

	second := job()
	if second.TaskID != first.TaskID {
		t.Fatalf("TaskIDs %s and %s, want one shared", first.TaskID, second.TaskID)
	}
	if n := h.d.Enqueue(ctx, slog.Default(), []store.Job{second}); n != 1 {
		t.Fatalf("%d arrived, want 1", n)
	}
	if id, state := owner(second); id != second.ID || state != asynq.TaskStatePending {
		t.Fatalf("the TaskID holds job %s's task, %v; want the second job's, pending", id, state)
	}
	if _, err := h.d.Reconcile(ctx, slog.Default(), h.live()); err != nil {
		t.Fatal(err)
	}
	if id, state := owner(second); id != second.ID || state != asynq.TaskStatePending {
		t.Fatalf("after reconciling, the TaskID holds job %s's task, %v; want the second job's, pending", id, state)
	}
}

// Retrying a failed batch is new work for the queue: it goes through the
// batch's cap like the batch's first run, not all at once.
func TestRerunKeepsTheBatchCap(t *testing.T) {
	h := newHarness(t, 2)
	ctx := context.Background()
	recorded := h.importJobs(4)
	for _, j := range recorded {
		if _, _, err := h.env.Store.JobFinished(ctx, j.ID, store.JobFailed, "download_failed", "boom"); err != nil {
			t.Fatal(err)
		}
	}
	retried, _, err := h.d.Rerun(ctx, slog.Default(), recorded)
	if err != nil || len(retried) != 4 {
		t.Fatalf("rerun: %v, %v; want all 4 put back", retried, err)
	}
	inQueue := func() (n int) {
		for _, j := range recorded {
			if _, err := h.inspector.GetTaskInfo(j.Queue, j.TaskID); err == nil {
				n++
			}
		}
		return n
	}
	if n := inQueue(); n != 2 {
		t.Fatalf("%d of the batch's 4 retried tasks in the queue, want its cap of 2", n)
	}
	for _, j := range recorded {
		if got, _ := h.env.Store.JobByID(ctx, j.ID); got.Status != store.JobQueued {
			t.Fatalf("job %s is %s after the retry, want queued", j.ID, got.Status)
		}
	}
	// A job handed over ends: the next one takes its place.
	var first store.Job
	for _, j := range recorded {
		if got, _ := h.env.Store.JobByID(ctx, j.ID); got.EnqueuedAt != nil {
			first = *got
			break
		}
	}
	if _, _, err := h.env.Store.JobFinished(ctx, first.ID, store.JobDone, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := h.inspector.DeleteTask(first.Queue, first.TaskID); err != nil {
		t.Fatal(err)
	}
	owner, err := h.env.Store.ProjectOwner(ctx, h.project)
	if err != nil {
		t.Fatal(err)
	}
	if n := h.d.Admit(ctx, slog.Default(), store.UserQueue{User: owner, Queue: first.Queue}); n != 1 || inQueue() != 2 {
		t.Fatalf("admitted %d, %d in the queue; want the next one in the finished one's place", n, inQueue())
	}
}
