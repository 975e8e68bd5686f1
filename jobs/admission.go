package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/store"
	"lightbox/tasks"
)

// Enqueue hands recorded jobs to the queue and notes which arrived: jobs of
// no batch, or of a batch no longer running, at once; a running batch's
// jobs as far as the caps admit (see Admit). Failures are logged, not
// returned: the jobs are safe in Postgres and the sweep hands them over
// again; TaskIDs make a second enqueue of a live task a no-op. It returns
// how many arrived.
func (d *Dispatcher) Enqueue(ctx context.Context, log *slog.Logger, jobs []store.Job) int {
	var now, batched []store.Job
	for _, j := range jobs {
		if j.BatchID == nil {
			now = append(now, j)
		} else {
			batched = append(batched, j)
		}
	}
	var uqs []store.UserQueue
	if len(batched) > 0 {
		var outside []store.Job
		var err error
		uqs, outside, err = d.Store.UserQueuesOf(ctx, batched)
		if err != nil {
			log.Warn("look up whose batch jobs these are; the sweeper will enqueue them", "err", err)
		}
		// No admission walks a batch that is not running (a failed job of
		// a cancelled batch run again, say): its jobs go as they are.
		now = append(now, outside...)
	}
	return d.enqueue(ctx, log, now) + d.Admit(ctx, log, uqs...)
}

// Admit tops each user queue up with its user's waiting batch jobs, as far
// as the caps allow (store.AdmissibleJobs), and returns how many it handed
// over. Two callers admitting the same job at once are harmless: its
// TaskID makes the second enqueue a no-op.
func (d *Dispatcher) Admit(ctx context.Context, log *slog.Logger, uqs ...store.UserQueue) int {
	n := 0
	for _, uq := range uqs {
		jobs, err := d.Store.AdmissibleJobs(ctx, uq, time.Now().Add(time.Minute), d.Caps)
		if err != nil {
			log.Warn("admit batch jobs; the sweeper will", "user", uq.User, "queue", uq.Queue, "err", err)
			continue
		}
		n += d.enqueue(ctx, log, jobs)
	}
	return n
}

// enqueue hands jobs to the queue as they are, each once: a job whose
// claim another caller holds is theirs to send (store.ClaimEnqueue).
func (d *Dispatcher) enqueue(ctx context.Context, log *slog.Logger, jobs []store.Job) int {
	if len(jobs) == 0 {
		return 0
	}
	ids := make([]uuid.UUID, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	claimed, err := d.Store.ClaimEnqueue(ctx, ids)
	if err != nil {
		log.Warn("claim jobs to enqueue; the sweeper will", "err", err)
		return 0
	}
	mine := make(map[uuid.UUID]bool, len(claimed))
	for _, id := range claimed {
		mine[id] = true
	}
	jobs = slices.DeleteFunc(slices.Clone(jobs), func(j store.Job) bool { return !mine[j.ID] })
	ts := make([]*asynq.Task, len(jobs))
	for i, j := range jobs {
		ts[i] = tasks.NewOn(j.Queue, j.Type, j.Payload, j.TaskID)
	}
	var failed []uuid.UUID
	for i, err := range tasks.EnqueueAll(ctx, d.Queue, ts) {
		if tasks.IDInUse(err) {
			err = d.settleIDInUse(ctx, jobs[i], ts[i])
		}
		if err != nil {
			log.Warn("enqueue failed; the sweeper will retry", "job", jobs[i].ID, "err", err)
			failed = append(failed, jobs[i].ID)
		}
	}
	// Left claimed, a job that was never sent would wait for the sweep to
	// find its task missing (ReconcileAfter) rather than never handed over.
	if err := d.Store.UnclaimEnqueue(context.WithoutCancel(ctx), failed); err != nil {
		log.Warn("give back claims of jobs not enqueued; the sweep will find them", "err", err)
	}
	return len(jobs) - len(failed)
}

// settleIDInUse settles an enqueue of j that found its TaskID in use.
// Usually the task is j's own, enqueued before (at-least-once callers
// enqueue again freely). But two jobs can share a TaskID (an edit applied
// again over its latest version), and an archived task of the earlier job
// would hold it for good: j would never run, and reconciling j would run
// the earlier job's task again. Such a task, finished with, makes room
// for j's. j's own task, even archived, is left alone: j may have just
// ended, its state not yet written (Rerun clears the way itself).
func (d *Dispatcher) settleIDInUse(ctx context.Context, j store.Job, t *asynq.Task) error {
	info, err := d.Inspector.GetTaskInfo(j.Queue, j.TaskID)
	if errors.Is(err, asynq.ErrTaskNotFound) {
		return tasks.Enqueue(ctx, d.Queue, t) // gone meanwhile
	}
	if err != nil {
		return err
	}
	var owner tasks.Job
	if json.Unmarshal(info.Payload, &owner) != nil || owner.JobID == j.ID || !ended(info.State) {
		return nil
	}
	if err := d.Inspector.DeleteTask(j.Queue, j.TaskID); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
		return err
	}
	return tasks.Enqueue(ctx, d.Queue, t)
}

// ended is a task Asynq keeps after its last run: archived (failed for
// good) or completed (kept for its retention). It still holds its TaskID.
func ended(s asynq.TaskState) bool {
	return s == asynq.TaskStateArchived || s == asynq.TaskStateCompleted
}

// admitWait is the longest an ended job's room under the caps waits to be
// filled (see roomMaker).
const admitWait = 250 * time.Millisecond

// roomMaker admits waiting batch jobs as a worker's jobs end, a quarter of
// a cap's room at a time: admitting after every job that ended cost more
// Postgres time than the ingest itself asks for (the admission query,
// then marking the admitted jobs), and a queue three quarters full still
// has work for every worker. Room that stays short of a quarter is filled
// after admitWait, so a user queue whose jobs end on several workers, each
// seeing only its own, never waits long.
type roomMaker struct {
	d     *Dispatcher
	log   *slog.Logger
	every int

	mu     sync.Mutex
	count  map[store.UserQueue]int
	timers map[store.UserQueue]*time.Timer
	closed bool
}

func newRoomMaker(d *Dispatcher, log *slog.Logger) *roomMaker {
	// A quarter of the smallest cap set; with none, after every job.
	smallest := 0
	for _, c := range []int{d.Caps.Batch, d.Caps.User} {
		if c > 0 && (smallest == 0 || c < smallest) {
			smallest = c
		}
	}
	every := max(1, smallest/4)
	return &roomMaker{d: d, log: log, every: every, count: map[store.UserQueue]int{}, timers: map[store.UserQueue]*time.Timer{}}
}

// ended counts n jobs of uq that ended, admitting when they make enough
// room.
func (r *roomMaker) ended(ctx context.Context, uq store.UserQueue, n int) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.count[uq] += n
	due := r.count[uq] >= r.every
	if due {
		r.reset(uq)
	} else if r.timers[uq] == nil {
		r.timers[uq] = time.AfterFunc(admitWait, func() { r.admitNow(uq) })
	}
	r.mu.Unlock()
	if due {
		r.d.Admit(ctx, r.log, uq)
	}
}

func (r *roomMaker) admitNow(uq store.UserQueue) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.reset(uq)
	r.mu.Unlock()
	r.d.Admit(context.Background(), r.log, uq)
}

// reset forgets uq's count and timer; r.mu is held.
func (r *roomMaker) reset(uq store.UserQueue) {
	delete(r.count, uq)
	if t := r.timers[uq]; t != nil {
		t.Stop()
		delete(r.timers, uq)
	}
}

// close drops the room not yet filled: the sweep admits what waits.
func (r *roomMaker) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for uq := range r.timers {
		r.reset(uq)
	}
}
