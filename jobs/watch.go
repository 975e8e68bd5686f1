package jobs

import (
	"context"
	"slices"
	"sync"
	"time"

	"lightbox/store"
	"lightbox/tasks"
	"lightbox/tasks/queuestate"
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

// Watch repairs, every watchEvery until ctx ends, what the sweep would
// only repair minutes later: a Redis that lost its data, and the tasks of
// a worker that died.
func (tr *Tracker) Watch(ctx context.Context) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := tr.noticeLoss(ctx, time.Now()); err != nil && ctx.Err() == nil {
			tr.log.Warn("check Redis for lost data", "err", err)
		}
		if err := tr.handBack(ctx, time.Now()); err != nil && ctx.Err() == nil {
			tr.log.Warn("hand back the tasks of dead workers", "err", err)
		}
		if err := tr.noticeDeaths(ctx, time.Now()); err != nil && ctx.Err() == nil {
			tr.log.Warn("look for jobs of dead workers", "err", err)
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
func (tr *Tracker) noticeLoss(ctx context.Context, now time.Time) error {
	missing, err := queuestate.Register(ctx, tr.rdb, tr.queues)
	if err != nil {
		return err
	}
	tr.loss.mu.Lock()
	// A queue missing the first time is a new Redis, or a loss before this
	// process started: the sweep's usual pace repairs that.
	lost := missing > 0 && tr.loss.registered
	tr.loss.registered = true
	if lost {
		tr.loss.at = now
	}
	at := tr.loss.at
	tr.loss.mu.Unlock()
	if lost {
		tr.log.Warn("Redis lost its queues; putting back every job it held", "queues", missing)
	}
	switch {
	case at.IsZero():
		return nil
	case now.Sub(at) < heartbeatSettle:
		return tr.reconcileLost(ctx, now, store.JobQueued)
	}
	if err := tr.reconcileLost(ctx, now, store.JobQueued, store.JobRunning); err != nil {
		return err
	}
	tr.loss.mu.Lock()
	if tr.loss.at.Equal(at) {
		tr.loss.at = time.Time{}
	}
	tr.loss.mu.Unlock()
	return nil
}

// reconcileLost compares every job recorded as in the queue in one of
// statuses with Asynq (see Dispatcher.Reconcile), but the few whose
// row just changed and those a live worker runs; and, for waiting ones,
// the cluster runs due by now.
func (tr *Tracker) reconcileLost(ctx context.Context, now time.Time, statuses ...store.JobStatus) error {
	tr.reconcileMu.Lock()
	defer tr.reconcileMu.Unlock()
	live, err := queuestate.Running(ctx, tr.rdb, now)
	if err != nil {
		return err
	}
	var after *store.Cursor
	for {
		page, err := tr.d.Store.LiveJobs(ctx, now.Add(-lossQuiet), after, sweepBatch)
		if err != nil {
			return err
		}
		var check []store.Job
		for _, j := range page {
			if !live[j.TaskID] && slices.Contains(statuses, j.Status) {
				check = append(check, j)
			}
		}
		r, err := tr.d.Reconcile(ctx, tr.log, check)
		tr.reconciled(ctx, r)
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
	overdue, err := tr.d.Store.OverdueClusterRuns(ctx, now, now.Add(-tasks.Timeout(tasks.TypeCluster)-stuckRunAfter), sweepBatch)
	if err != nil {
		return err
	}
	_, err = tr.d.ReconcileClusterRuns(ctx, tr.log, overdue)
	return err
}

// handBack gives the tasks of workers that died back to their queues as
// soon as their heartbeat is gone (see queuestate.HandBack).
func (tr *Tracker) handBack(ctx context.Context, now time.Time) error {
	given, err := queuestate.HandBack(ctx, tr.rdb, tr.queues, now)
	for _, a := range given {
		if a.Given {
			tr.log.Info("handed back a task whose worker died", "queue", a.Queue, "task", a.TaskID)
			continue
		}
		tr.loss.mu.Lock()
		seen := tr.loss.leftToAsynq[a.TaskID]
		if len(tr.loss.leftToAsynq) > 10_000 {
			clear(tr.loss.leftToAsynq)
		}
		tr.loss.leftToAsynq[a.TaskID] = true
		tr.loss.mu.Unlock()
		if !seen {
			tr.log.Warn("a task's workers died with it too often; Asynq's lease recovery takes it, counting a retry",
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
func (tr *Tracker) noticeDeaths(ctx context.Context, now time.Time) error {
	dead, err := queuestate.DeadServers(ctx, tr.rdb, now)
	if err != nil || len(dead) == 0 {
		return err
	}
	tr.log.Info("workers died; looking for the jobs they ran", "workers", dead)
	return tr.reconcileLost(ctx, now, store.JobRunning)
}
