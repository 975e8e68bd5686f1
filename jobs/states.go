package jobs

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
)

// State writer timing: how often it writes at most, how it waits out a
// database that refuses a write, and how long it keeps states a database
// outage kept from being written before it tries again.
const (
	jobStateEvery   = 5 * time.Millisecond
	jobStateTries   = 4
	jobStateBackoff = 50 * time.Millisecond
	databaseRetry   = 5 * time.Second
)

// stateWriter records the states of the jobs this process runs, many at a
// time: a task hands over its job's running state and its outcome without
// waiting, and the writer sends everything handed over since its last
// write in one transaction (store.RecordJobStates) and the events in one
// Redis pipeline, at most every jobStateEvery. Two round trips per task
// become two per write, whatever the number of tasks.
//
// States that a database outage keeps from being written are kept until
// it answers again. A process that dies before a write loses the states
// it held; the job's
// row then shows it queued or running while Asynq no longer has its task
// (a completed task is not kept), and the sweeper's reconcile runs the
// task again once the row has been quiet a while: at least once, as
// every task already is.
type stateWriter struct {
	t *Tracker

	mu      sync.Mutex
	pending []store.JobUpdate
	waiters []chan struct{} // closed once what was pending when they came is written
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

func newStateWriter(t *Tracker) *stateWriter {
	sw := &stateWriter{t: t, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go sw.run()
	return sw
}

// record hands over a job's new state.
func (sw *stateWriter) record(c store.JobUpdate) {
	sw.mu.Lock()
	if sw.closed {
		sw.mu.Unlock()
		sw.write([]store.JobUpdate{c})
		return
	}
	sw.pending = append(sw.pending, c)
	sw.mu.Unlock()
	sw.poke()
}

// sync waits until every state handed over before it is written.
func (sw *stateWriter) sync() {
	ch := make(chan struct{})
	sw.mu.Lock()
	if sw.closed {
		sw.mu.Unlock()
		return
	}
	sw.waiters = append(sw.waiters, ch)
	sw.mu.Unlock()
	sw.poke()
	<-ch
}

// close writes what is pending and stops the writer; states handed over
// later are written at once by the caller.
func (sw *stateWriter) close() {
	sw.mu.Lock()
	sw.closed = true
	sw.mu.Unlock()
	sw.poke()
	<-sw.done
}

// keep hands states back to be written after databaseRetry, before
// anything handed over since.
func (sw *stateWriter) keep(states []store.JobUpdate) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.closed {
		return
	}
	sw.pending = append(states, sw.pending...)
	time.AfterFunc(databaseRetry, sw.poke)
}

func (sw *stateWriter) poke() {
	select {
	case sw.wake <- struct{}{}:
	default:
	}
}

func (sw *stateWriter) run() {
	defer close(sw.done)
	var last time.Time
	for range sw.wake {
		// Gather what arrives within the interval into one write.
		time.Sleep(time.Until(last.Add(jobStateEvery)))
		last = time.Now()
		sw.mu.Lock()
		changes, waiters, closed := sw.pending, sw.waiters, sw.closed
		sw.pending, sw.waiters = nil, nil
		sw.mu.Unlock()
		sw.write(changes)
		for _, ch := range waiters {
			close(ch)
		}
		if closed {
			return
		}
	}
}

// write records changes, in the order they were handed over, and tells
// listeners. A job's later state replaces an earlier one of the same
// write; the events of both are sent.
func (sw *stateWriter) write(changes []store.JobUpdate) {
	if len(changes) == 0 {
		return
	}
	ctx := context.Background()
	t := sw.t
	// at is where each job's state is in states; final, its last change.
	at := make(map[uuid.UUID]int, len(changes))
	final := make(map[uuid.UUID]int, len(changes))
	states := make([]store.JobUpdate, 0, len(changes))
	for i, c := range changes {
		final[c.ID] = i
		if k, ok := at[c.ID]; ok {
			states[k] = c
			continue
		}
		at[c.ID] = len(states)
		states = append(states, c)
	}
	var jobs []store.Job
	var batches []store.Batch
	var err error
	for try := 1; ; try++ {
		if jobs, batches, err = t.d.Store.RecordJobStates(ctx, states); err == nil || try == jobStateTries {
			break
		}
		time.Sleep(jobStateBackoff << try)
	}
	if err != nil {
		if t.d.Store.Down(ctx) {
			// Kept for when it is back: a job whose work ended during an
			// outage is recorded done then, not run again by the
			// sweeper's reconcile. A later state of a job replaces these.
			t.log.Warn("record job states: the database does not answer; keeping them", "jobs", len(states), "err", err)
			sw.keep(states)
			return
		}
		// The sweeper's reconcile repairs rows left behind.
		t.log.Error("record job states", "jobs", len(states), "err", err)
		return
	}
	byID := make(map[uuid.UUID]*store.Job, len(jobs))
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
	}
	// Each batch's news goes with the last of its jobs to end here.
	lastOfBatch := map[uuid.UUID]*store.Batch{}
	for i := range batches {
		lastOfBatch[batches[i].ID] = &batches[i]
	}
	var updates []jobUpdate
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		j := byID[c.ID]
		if j == nil {
			continue // canceled meanwhile, or gone with its project
		}
		u := jobUpdate{job: j}
		if final[c.ID] != i {
			// An earlier state of the same write: its event as it was.
			earlier := *j
			earlier.Status, earlier.Attempt, earlier.Progress = c.Status, c.Attempt, 0
			earlier.ErrorCode, earlier.ErrorMessage = nil, nil
			if c.Code != "" {
				earlier.ErrorCode, earlier.ErrorMessage = &c.Code, &c.Message
			}
			u.job = &earlier
		} else if j.BatchID != nil && lastOfBatch[*j.BatchID] != nil {
			u.batch = lastOfBatch[*j.BatchID]
			delete(lastOfBatch, *j.BatchID)
		}
		updates = append(updates, u)
	}
	slices.Reverse(updates)
	t.jobsChanged(ctx, updates)
	// The jobs that ended leave room under their users' queue caps.
	userOf := make(map[uuid.UUID]uuid.UUID, len(batches))
	for _, b := range batches {
		userOf[b.ID] = b.UserID
	}
	room := map[store.UserQueue]int{}
	for _, j := range jobs {
		if j.BatchID == nil || (j.Status != store.JobDone && j.Status != store.JobFailed) {
			continue
		}
		if u, ok := userOf[*j.BatchID]; ok {
			room[store.UserQueue{User: u, Queue: j.Queue}]++
		}
	}
	for uq, n := range room {
		t.room.ended(ctx, uq, n)
	}
}
