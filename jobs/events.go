package jobs

import (
	"context"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/ptr"
	"lightbox/store"
)

// Event payloads are small on purpose: they say what changed and clients
// fetch the resource when they want all of it.

type jobEvent struct {
	JobID    uuid.UUID       `json:"jobId"`
	AssetID  *uuid.UUID      `json:"assetId"`
	BatchID  *uuid.UUID      `json:"batchId"`
	JobType  string          `json:"jobType"`
	Status   store.JobStatus `json:"status"`
	Progress float64         `json:"progress"`
	Attempt  int             `json:"attempt"`
	Error    *Failure        `json:"error"`
}

type batchEvent struct {
	ID        uuid.UUID `json:"id"`
	Status    string    `json:"status"`
	Total     int       `json:"total"`
	Completed int       `json:"completed"`
	Failed    int       `json:"failed"`
}

type assetEvent struct {
	AssetID   uuid.UUID `json:"assetId"`
	Status    string    `json:"status"`
	ErrorCode *string   `json:"errorCode"`
}

// Failure is a failure's code and message as events and webhooks carry
// them.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// FailureOf is the failure a row records in its error code and message,
// or nil when it records none.
func FailureOf(code, message *string) *Failure {
	if code == nil {
		return nil
	}
	return &Failure{Code: *code, Message: ptr.Value(message)}
}

// jobUpdate is a job's new state and, when it ended in a batch, the
// batch's (nil when another update of the same round carries it).
type jobUpdate struct {
	job   *store.Job
	batch *store.Batch
}

// jobsChanged tells listeners of jobs' new states, their assets' and their
// batches', all in one round trip to Redis, and webhooks of the assets that
// failed and the batches that ended.
func (t *Tracker) jobsChanged(ctx context.Context, us []jobUpdate) {
	var evs []events.Event
	add := func(name events.Name, project, batch uuid.UUID, data any) {
		ev, err := events.New(name, project, batch, data)
		if err != nil {
			t.log.Warn("publish event", "event", name, "project", project, "err", err)
			return
		}
		evs = append(evs, ev)
	}
	for _, u := range us {
		j, b := u.job, u.batch
		batch := uuid.Nil
		if j.BatchID != nil {
			batch = *j.BatchID
		}
		ev := jobEvent{JobID: j.ID, AssetID: j.AssetID, BatchID: j.BatchID, JobType: j.Type, Status: j.Status, Progress: j.Progress,
			Attempt: j.Attempt, Error: FailureOf(j.ErrorCode, j.ErrorMessage)}
		name := events.JobProgress
		if j.Status == store.JobDone || j.Status == store.JobFailed {
			name = events.JobDone
		}
		if j.ProjectID == uuid.Nil {
			continue // a webhook ping: no project's stream is about it
		}
		add(name, j.ProjectID, batch, ev)
		if j.AssetID != nil && name == events.JobDone {
			if a, err := t.d.Store.AssetByID(ctx, *j.AssetID); err == nil {
				add(events.AssetUpdated, j.ProjectID, batch, assetEvent{AssetID: a.ID, Status: a.Status, ErrorCode: a.ErrorCode})
				// Only a failure that failed the asset is told; AssetFailed checks.
				t.d.Hooks.AssetFailed(ctx, t.log, a, j)
			}
		}
		if b != nil {
			name := events.BatchUpdated
			if b.CompletedAt != nil {
				name = events.BatchCompleted
			}
			add(name, b.ProjectID, b.ID, batchEvent{ID: b.ID, Status: b.Status, Total: b.Total, Completed: b.Completed, Failed: b.Failed})
			t.d.Hooks.BatchEnded(ctx, t.log, b)
		}
	}
	// A lost event is logged, never a task failure: clients resync from
	// Postgres.
	if err := t.events.PublishAll(ctx, evs); err != nil {
		t.log.Warn("publish events", "count", len(evs), "err", err)
	}
}

// Tell sends listeners what a running task has to report beyond its job's
// state: a thumbnail made, faces found, an export's progress, a cluster
// run's groups. A lost event is logged, never the task's failure: clients
// resync from the API.
func (t *Tracker) Tell(ctx context.Context, name events.Name, project, batch uuid.UUID, data any) {
	ev, err := events.New(name, project, batch, data)
	if err == nil {
		_, err = t.events.Publish(ctx, ev)
	}
	if err != nil {
		t.log.Warn("publish event", "event", name, "project", project, "err", err)
	}
}
