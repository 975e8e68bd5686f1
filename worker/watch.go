package worker

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"lightbox/internal/queuestate"
	"lightbox/store"
	"lightbox/tasks"
)

// Watch timing. Each worker looks this often for a Redis that lost its
// data and for tasks a dead worker held: both cost a few Redis commands.
const (
	watchEvery = 2 * time.Second
	// heartbeatSettle is how long after a loss every live server has
	// written its heartbeat (every 5 s) again, listing what it runs.
	heartbeatSettle = 7 * time.Second
	// lossQuiet: a job whose row changed this recently may have its end
	// on the way (the job-state writer sends within milliseconds).
	lossQuiet = 5 * time.Second
)

// redisLoss is what a worker remembers of a loss of Redis's data it saw.
type redisLoss struct {
	mu sync.Mutex
	at time.Time // when this process saw the loss; zero when settled
	// registered is set once this process has named its queues.
	registered bool
	// leftToAsynq are the tasks already reported as handed back too often.
	leftToAsynq map[string]bool
}

// queues are the names of the queues this worker serves.
func (w *Worker) queues() []string {
	return slices.Sorted(maps.Keys(w.cfg.QueueWeights))
}

// watch repairs, every watchEvery until ctx ends, what the sweep would
// only repair minutes later: a Redis that lost its data, and the tasks of
// a worker that died.
func (w *Worker) watch(ctx context.Context) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := w.noticeLoss(ctx, time.Now()); err != nil && ctx.Err() == nil {
			w.log.Warn("check Redis for lost data", "err", err)
		}
		if err := w.handBack(ctx, time.Now()); err != nil && ctx.Err() == nil {
			w.log.Warn("hand back the tasks of dead workers", "err", err)
		}
		if err := w.noticeDeaths(ctx, time.Now()); err != nil && ctx.Err() == nil {
			w.log.Warn("look for jobs of dead workers", "err", err)
		}
	}
}

// noticeLoss registers the queues this worker serves in Asynq's registry,
// so Asynqmon and the queue metrics list them again after Redis lost its
// data; a queue missing from it once this process had named them says
// Redis lost everything, and every
// job Postgres records as waiting goes back at once, without waiting for
// the sweep's quiet period, at each look until the loss has settled.
// Jobs recorded as running wait until live workers have listed what they
// run again (heartbeatSettle): those still running are left to finish,
// the rest go back too, and the loss is over.
func (w *Worker) noticeLoss(ctx context.Context, now time.Time) error {
	missing, err := queuestate.Register(ctx, w.rdb, w.queues())
	if err != nil {
		return err
	}
	w.loss.mu.Lock()
	// A queue missing the first time is a new Redis, or a loss before this
	// process started: the sweep's usual pace repairs that.
	lost := missing > 0 && w.loss.registered
	w.loss.registered = true
	if lost {
		w.loss.at = now
	}
	at := w.loss.at
	w.loss.mu.Unlock()
	if lost {
		w.log.Warn("Redis lost its queues; putting back every job it held", "queues", missing)
	}
	switch {
	case at.IsZero():
		return nil
	case now.Sub(at) < heartbeatSettle:
		return w.reconcileLost(ctx, now, store.JobQueued)
	}
	if err := w.reconcileLost(ctx, now, store.JobQueued, store.JobRunning); err != nil {
		return err
	}
	w.loss.mu.Lock()
	if w.loss.at.Equal(at) {
		w.loss.at = time.Time{}
	}
	w.loss.mu.Unlock()
	return nil
}

// reconcileLost compares every job recorded as in the queue in one of
// statuses with Asynq (see jobs.Dispatcher.Reconcile), but the few whose
// row just changed and those a live worker runs; and, for waiting ones,
// the cluster runs due by now.
func (w *Worker) reconcileLost(ctx context.Context, now time.Time, statuses ...string) error {
	w.reconcileMu.Lock()
	defer w.reconcileMu.Unlock()
	live, err := queuestate.Running(ctx, w.rdb, now)
	if err != nil {
		return err
	}
	var after *store.Cursor
	for {
		page, err := w.st.LiveJobs(ctx, now.Add(-lossQuiet), after, sweepBatch)
		if err != nil {
			return err
		}
		var check []store.Job
		for _, j := range page {
			if !live[j.TaskID] && slices.Contains(statuses, j.Status) {
				check = append(check, j)
			}
		}
		r, err := w.jobs.Reconcile(ctx, w.log, check)
		w.reconciled(ctx, r)
		if err != nil {
			return err
		}
		if len(page) < sweepBatch {
			break
		}
		last := page[len(page)-1]
		after = &store.Cursor{Time: last.CreatedAt, ID: last.ID}
	}
	if !slices.Contains(statuses, store.JobQueued) {
		return nil
	}
	overdue, err := w.st.OverdueClusterRuns(ctx, now, now.Add(-tasks.Timeout(tasks.TypeCluster)-stuckRunAfter), sweepBatch)
	if err != nil {
		return err
	}
	_, err = w.jobs.ReconcileClusterRuns(ctx, w.log, overdue)
	return err
}

// handBack gives the tasks of workers that died back to their queues as
// soon as their heartbeat is gone (see queuestate.HandBack).
func (w *Worker) handBack(ctx context.Context, now time.Time) error {
	given, err := queuestate.HandBack(ctx, w.rdb, w.queues(), now)
	for _, a := range given {
		if a.Given {
			w.log.Info("handed back a task whose worker died", "queue", a.Queue, "task", a.TaskID)
			continue
		}
		w.loss.mu.Lock()
		seen := w.loss.leftToAsynq[a.TaskID]
		if len(w.loss.leftToAsynq) > 10_000 {
			clear(w.loss.leftToAsynq)
		}
		w.loss.leftToAsynq[a.TaskID] = true
		w.loss.mu.Unlock()
		if !seen {
			w.log.Warn("a task's workers died with it too often; Asynq's lease recovery takes it, counting a retry",
				"queue", a.Queue, "task", a.TaskID, "handBacks", queuestate.MaxHandBacks)
		}
	}
	return err
}

// noticeDeaths puts back, once a worker's heartbeat has lapsed, the jobs
// it ended but could not record before it died: their rows say running,
// their tasks are gone from Asynq (a completed task is not kept), and the
// sweep would wait for the rows to be quiet for minutes. They run again,
// as every task may. Its tasks still active are handBack's.
func (w *Worker) noticeDeaths(ctx context.Context, now time.Time) error {
	dead, err := queuestate.DeadServers(ctx, w.rdb, now)
	if err != nil || len(dead) == 0 {
		return err
	}
	w.log.Info("workers died; looking for the jobs they ran", "workers", dead)
	return w.reconcileLost(ctx, now, store.JobRunning)
}
