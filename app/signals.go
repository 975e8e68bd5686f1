package app

import (
	"context"

	"github.com/google/uuid"

	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// JudgeProject records the project:signals job that gives a project's
// photos ingested before the judged signals existed their
// focus, motion, exposure, warnings and score, read from their previews
// (tasks.SignalsPayload). One job, so the request stays short however many
// photos the project holds; it is handed to the queue as it commits.
func (a *App) JudgeProject(ctx context.Context, project uuid.UUID) (store.Job, error) {
	var job store.Job
	err := a.store.WithTx(ctx, func(tx *store.Store) (err error) {
		job, err = jobs.Insert(ctx, tx, tasks.SignalsPayload{Job: tasks.NewJob(project)})
		return err
	})
	return job, err
}
