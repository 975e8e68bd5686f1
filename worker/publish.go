package worker

import (
	"context"

	"github.com/google/uuid"

	"lightbox/events"
)

// publish sends one event; a lost event is logged, never a task failure:
// clients resync from Postgres. Job, asset and batch events are the
// jobs.Tracker's.
func (w *Worker) publish(ctx context.Context, name events.Name, project, batch uuid.UUID, data any) {
	ev, err := events.New(name, project, batch, data)
	if err == nil {
		_, err = w.events.Publish(ctx, ev)
	}
	if err != nil {
		w.log.Warn("publish event", "event", name, "project", project, "err", err)
	}
}
