package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/events"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// DeleteAsset removes owner's asset at once (store.DeleteAsset) and
// records the asset:delete job that removes its bytes and derived files.
// The tasks of its jobs still waiting have nothing left to do and leave the
// queue; a running one is cancelled, and finds the asset gone when it
// saves at the latest; open views drop the photo. It returns the asset's
// project.
func (a *App) DeleteAsset(ctx context.Context, log *slog.Logger, owner, asset uuid.UUID) (uuid.UUID, error) {
	// A task that read the asset before the delete may still write its
	// files, until its timeout ends; the sweeper deletes them after that.
	late := make([]string, len(blob.DerivedKinds))
	for i, kind := range blob.DerivedKinds {
		late[i] = blob.DerivedKey(asset, kind)
	}
	lateUntil := time.Now().Add(tasks.FileWritesEnd())
	var gone *store.DeletedAsset
	err := a.store.WithTx(ctx, func(tx *store.Store) error {
		var err error
		if gone, err = tx.DeleteAsset(ctx, owner, asset, late, lateUntil); err != nil {
			return err
		}
		_, err = jobs.Insert(ctx, tx, tasks.DeletePayload{Job: tasks.NewJob(gone.ProjectID), AssetID: asset, Keys: gone.Keys})
		return err
	})
	if err != nil {
		return uuid.Nil, err
	}
	a.Jobs.Drop(log, gone.LiveJobs)
	a.publish(ctx, log, events.AssetUpdated, gone.ProjectID, uuid.Nil, map[string]any{"assetId": asset, "deleted": true})
	return gone.ProjectID, nil
}
