package app

import (
	"context"
	"log/slog"

	"github.com/google/uuid"

	"lightbox/events"
)

// publish sends one event to a project's streams (and a batch's, unless
// batch is uuid.Nil), once what it tells is committed. A lost event is
// only logged: clients resync from the API.
func (a *App) publish(ctx context.Context, log *slog.Logger, name events.Name, project, batch uuid.UUID, data any) {
	if a.Events == nil {
		return
	}
	ev, err := events.New(name, project, batch, data)
	if err == nil {
		_, err = a.Events.Publish(ctx, ev)
	}
	if err != nil {
		log.Warn("publish event", "event", name, "project", project, "err", err)
	}
}
