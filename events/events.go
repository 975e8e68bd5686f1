// Package events provides Lightbox's live progress: typed events, publishing
// them through Redis with ids that grow by one per project, a short replay log
// for clients that reconnect, a per-process hub that fans a project's events
// out to its Server-Sent Events streams, and the SSE framing itself.
//
// # Ids, replay and state_sync
//
// Every project has one sequence of event ids (1, 2, 3, ...). Publish takes
// the next id and publishes the event in a single Lua script, so ids on the
// project's channel are strictly increasing in publish order and no id is
// skipped. The script also appends the event to a capped log (the newest
// 1,000 events by default, kept for 24 hours after the last publish).
//
// A stream handler resumes a client like this:
//
//  1. Subscribe first, so nothing published from now on is missed.
//  2. With a Last-Event-ID, call Since. When complete, write the replayed
//     events. When not complete (the id is older than what the log keeps,
//     or newer than anything published, as after a Redis reset), read Latest,
//     build the snapshot from Postgres, and write it as state_sync with that
//     id: whatever the snapshot misses has a larger id and still comes.
//     Without a Last-Event-ID the handler may do the same or just stream.
//  3. Call Stream with After set to the last id written, so events both
//     replayed and received live go out once.
//
// Publishers write Postgres first and publish after, so a snapshot taken
// after Latest includes every event up to that id.
//
// # Data
//
// An event's data is one JSON value, by convention the resource as the REST
// API shows it: the Job for job.progress and job.done, the Asset for
// asset.updated, the Cluster, the Export, and the batch for batch.updated and
// batch.completed. Events that belong to a batch carry its id, which is how
// a batch's stream picks its events out of the project's.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Name is an event's type, sent as the SSE "event:" field.
type Name string

// The event names.
const (
	JobProgress    Name = "job.progress"
	JobDone        Name = "job.done"
	AssetUpdated   Name = "asset.updated"
	ClusterUpdated Name = "cluster.updated"
	ExportUpdated  Name = "export.updated"
	BatchUpdated   Name = "batch.updated"
	BatchCompleted Name = "batch.completed"
	// GalleryUpdated says one of the project's galleries changed: its data
	// is {galleryId}, with assetId and favorite when a visitor chose a
	// photo or took it back, assetId and commentId when one commented, and
	// deleted: true when the owner deleted it.
	GalleryUpdated Name = "gallery.updated"
	// StateSync is the snapshot a server writes to one client whose
	// Last-Event-ID cannot be replayed. It is never published.
	StateSync Name = "state_sync"
)

// published lists the names Publish accepts.
var published = map[Name]bool{
	JobProgress: true, JobDone: true, AssetUpdated: true, ClusterUpdated: true,
	ExportUpdated: true, BatchUpdated: true, BatchCompleted: true, GalleryUpdated: true,
}

// Event is one progress event.
type Event struct {
	ID        uint64          `json:"id,omitzero"` // per project, assigned by Publish
	Name      Name            `json:"name"`
	ProjectID uuid.UUID       `json:"projectId"`
	BatchID   uuid.UUID       `json:"batchId,omitzero"` // uuid.Nil when the event belongs to no batch
	Data      json.RawMessage `json:"data"`
	Time      time.Time       `json:"time"`

	// frame is the event as one SSE message, encoded once by the hub for
	// all the streams it goes to; nil on an event built any other way.
	frame []byte
}

// ErrInvalid is wrapped by the errors New and Publish return for an event
// they refuse.
var ErrInvalid = errors.New("invalid event")

// New builds an event of the project, marshalling data once. batchID is
// uuid.Nil for an event outside any batch.
func New(name Name, projectID, batchID uuid.UUID, data any) (Event, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("%w: %s data: %v", ErrInvalid, name, err)
	}
	ev := Event{Name: name, ProjectID: projectID, BatchID: batchID, Data: raw, Time: time.Now().UTC()}
	if name != StateSync {
		if err := ev.validate(); err != nil {
			return Event{}, err
		}
	}
	return ev, nil
}

// validate is what Publish requires of an event.
func (ev Event) validate() error {
	switch {
	case !published[ev.Name]:
		return fmt.Errorf("%w: %q is not a published event name", ErrInvalid, ev.Name)
	case ev.ProjectID == uuid.Nil:
		return fmt.Errorf("%w: %s has no project", ErrInvalid, ev.Name)
	case len(ev.Data) > 0 && !json.Valid(ev.Data):
		return fmt.Errorf("%w: %s data is not valid JSON", ErrInvalid, ev.Name)
	}
	return nil
}

// InBatch reports whether the event belongs to batch; every event is in
// uuid.Nil, which stands for the whole project.
func (ev *Event) InBatch(batch uuid.UUID) bool {
	return batch == uuid.Nil || ev.BatchID == batch
}
