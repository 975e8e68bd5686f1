package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"lightbox/store"
	"lightbox/wait"
)

// CancelBatch cancels the jobs of batch, in project, that have not ended: the waiting
// tasks leave the queue, the running ones are cancelled and their
// handlers see their context end. The places the batch held under its
// user's queue caps go to the user's other batches at once, and webhooks
// hear of the batch as ended. It returns the canceled jobs' ids and the
// batch as it is now.
func (d *Dispatcher) CancelBatch(ctx context.Context, log *slog.Logger, project, batch uuid.UUID) ([]uuid.UUID, *store.Batch, error) {
	if err := d.MarkCanceling(ctx, project); err != nil {
		return nil, nil, err
	}
	dropped, nb, err := d.Store.CancelBatch(ctx, batch)
	if err != nil {
		return nil, nil, err
	}
	d.Drop(log, dropped)
	canceled := []uuid.UUID{}
	var freed []store.UserQueue
	for _, j := range dropped {
		canceled = append(canceled, j.ID)
		if uq := (store.UserQueue{User: nb.UserID, Queue: j.Queue}); !slices.Contains(freed, uq) {
			freed = append(freed, uq)
		}
	}
	ctx, cancel := AfterCommit(ctx)
	defer cancel()
	d.Admit(ctx, log, freed...)
	// A cancelled batch has ended: webhooks hear of it as batch.completed.
	d.Hooks.BatchEnded(ctx, log, nb)
	return canceled, nb, nil
}

// DismissJob gives up on failed job j: its task leaves the queue's
// archive and the job becomes canceled (store.DismissJob).
func (d *Dispatcher) DismissJob(ctx context.Context, log *slog.Logger, j *store.Job) (*store.Job, error) {
	if err := d.Inspector.DeleteTask(j.Queue, j.TaskID); err != nil &&
		!errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
		log.Warn("delete task", "task", j.TaskID, "err", err)
		return nil, fmt.Errorf("%w: %w", ErrQueueUnavailable, err)
	}
	if err := d.MarkCanceling(ctx, j.ProjectID); err != nil {
		return nil, err
	}
	return d.Store.DismissJob(ctx, j.ID)
}

// Drop takes the jobs' tasks out of the queue: a waiting task is deleted, a
// running one is cancelled and its handler sees its context end. A task
// never enqueued, or already gone, needs nothing.
func (d *Dispatcher) Drop(log *slog.Logger, jobs []store.Job) {
	for _, j := range jobs {
		d.DropTask(log, j.Queue, j.TaskID)
	}
}

// DropTask takes one task out of the queue, as Drop does.
func (d *Dispatcher) DropTask(log *slog.Logger, queue, taskID string) {
	info, err := d.Inspector.GetTaskInfo(queue, taskID)
	if err != nil {
		return
	}
	if info.State == asynq.TaskStateActive {
		err = d.Inspector.CancelProcessing(taskID)
	} else {
		err = d.Inspector.DeleteTask(queue, taskID)
	}
	if err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
		log.Warn("cancel task", "task", taskID, "err", err)
	}
}

// MarkCanceling sets project's cancel mark (see the package function) in
// d's Redis; an error is ErrQueueUnavailable.
func (d *Dispatcher) MarkCanceling(ctx context.Context, project uuid.UUID) error {
	if err := MarkCanceling(ctx, d.Redis, project); err != nil {
		d.Log.Warn("mark project for cancel", "project", project, "err", err)
		return fmt.Errorf("%w: %w", ErrQueueUnavailable, err)
	}
	return nil
}

// A project's cancel mark, kept in Redis, lets a worker skip the Postgres
// read of a job's status before it runs the job's task: a job can only be
// canceled in a project that carries the mark, so only those projects'
// tasks pay for the read. Whoever cancels jobs marks their project first,
// and cancels only once the mark is set, so no cancel committed in
// Postgres goes unseen.
//
// Workers remember a project's lack of a mark for markFresh (CancelMarks), so
// tasks need not ask Redis each; a new mark therefore settles for
// markSettle before its first cancel, by which time no remembered answer
// from before it is still believed.
//
// A mark is never removed: it costs a few bytes per project that ever had
// a job canceled, and those projects' tasks simply read as before. A Redis
// restored from a snapshot older than a mark can run a canceled job's task
// once more, which every task already tolerates (at least once).
const (
	markFresh  = 200 * time.Millisecond
	markSettle = 500 * time.Millisecond
)

func cancelMarkKey(project uuid.UUID) string {
	return "lightbox:jobs:cancel-mark:" + project.String()
}

// markScript sets the mark and, when it is new, a key that expires once
// the mark has settled; it answers how many milliseconds remain until then.
var markScript = redis.NewScript(`
if redis.call('SET', KEYS[1], 1, 'NX') then
	redis.call('SET', KEYS[2], 1, 'PX', ARGV[1])
	return tonumber(ARGV[1])
end
local left = redis.call('PTTL', KEYS[2])
if left < 0 then return 0 end
return left`)

// MarkCanceling marks project as one whose jobs may be canceled and returns
// once the mark has settled. Call it before the cancel, and do not cancel
// when it fails.
func MarkCanceling(ctx context.Context, rdb redis.Scripter, project uuid.UUID) error {
	key := cancelMarkKey(project)
	left, err := markScript.Run(ctx, rdb, []string{key, key + ":settling"}, markSettle.Milliseconds()).Int64()
	if err != nil || left <= 0 {
		return err
	}
	// One millisecond more: PTTL rounds down.
	return wait.For(ctx, time.Duration(left+1)*time.Millisecond)
}

// MayBeCanceled reports whether project carries the mark: when it does
// not, none of its jobs has been canceled.
func MayBeCanceled(ctx context.Context, rdb redis.Cmdable, project uuid.UUID) (bool, error) {
	n, err := rdb.Exists(ctx, cancelMarkKey(project)).Result()
	return n > 0, err
}

// CancelMarks answers MayBeCanceled for one process, asking Redis about a
// project at most once per markFresh while it is unmarked, and never
// again once it is marked (a mark stays).
type CancelMarks struct {
	rdb redis.Cmdable

	mu   sync.Mutex
	seen map[uuid.UUID]markSeen
}

// markSeen is what Redis answered about a project, asked at asOf.
type markSeen struct {
	marked bool
	asOf   time.Time
}

// marksKept bounds the projects a CancelMarks remembers; past it, it
// starts over.
const marksKept = 10_000

// NewCancelMarks returns a CancelMarks that reads rdb.
func NewCancelMarks(rdb redis.Cmdable) *CancelMarks {
	return &CancelMarks{rdb: rdb, seen: map[uuid.UUID]markSeen{}}
}

// MayBeCanceled reports whether project carries the mark, as
// the package function does.
func (m *CancelMarks) MayBeCanceled(ctx context.Context, project uuid.UUID) (bool, error) {
	m.mu.Lock()
	s, ok := m.seen[project]
	m.mu.Unlock()
	if ok && (s.marked || time.Since(s.asOf) < markFresh) {
		return s.marked, nil
	}
	// Taken before asking, so the answer is no older than asOf.
	asOf := time.Now()
	marked, err := MayBeCanceled(ctx, m.rdb, project)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	if len(m.seen) >= marksKept {
		clear(m.seen)
	}
	if !m.seen[project].marked {
		m.seen[project] = markSeen{marked: marked, asOf: asOf}
	}
	m.mu.Unlock()
	return marked, nil
}
