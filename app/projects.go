package app

import (
	"context"
	"time"

	"github.com/google/uuid"

	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// CreateProject adds a project owned by owner (store.CreateProject). A new
// project holds no photos, so it records no jobs: faces are off until
// UpdateProject switches them on.
func (a *App) CreateProject(ctx context.Context, owner uuid.UUID, title, description string, shootDate *time.Time, tz *string) (*store.Project, error) {
	return a.store.CreateProject(ctx, owner, title, description, shootDate, tz)
}

// UpdateProject applies in to owner's project id, as store.UpdateProject
// does. When it switches faces on, it records in the same transaction the
// job that gives the photos already in the project their asset:faces jobs
// (tasks.FacesScanPayload): one job, so that the request stays short
// however many photos the project holds. Switching on a project that
// detects faces already records nothing.
func UpdateProject(ctx context.Context, st *store.Store, owner, id uuid.UUID, in store.ProjectInput) (*store.Project, error) {
	var p *store.Project
	err := st.WithTx(ctx, func(tx *store.Store) error {
		was, err := tx.LockDetectsFaces(ctx, id)
		if err != nil {
			return err
		}
		if p, err = tx.UpdateProject(ctx, owner, id, in); err != nil || was || !p.DetectFaces {
			return err
		}
		_, err = jobs.Insert(ctx, tx, tasks.FacesScanPayload{Job: tasks.NewJob(id)})
		return err
	})
	return p, err
}
