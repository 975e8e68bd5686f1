package app

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"lightbox/store"
)

// UpdateCluster records a person's review of owner's cluster id (a title,
// the reviewed mark, the app's overrides; store.UpdateCluster), which later
// cluster runs keep, and returns the cluster.
func (a *App) UpdateCluster(ctx context.Context, owner, id uuid.UUID, change store.ClusterChange) (*store.Cluster, error) {
	return a.store.UpdateCluster(ctx, owner, id, change)
}

// ChooseClusterWinner makes winner the winner of owner's cluster id, as a
// person chose it: later cluster runs keep the choice while it is a
// member. A winner that is not a member is refused as a field of the
// request (winnerAssetId), since the caller named it.
func (a *App) ChooseClusterWinner(ctx context.Context, owner, id, winner uuid.UUID) (*store.Cluster, error) {
	cl, err := a.store.ChooseClusterWinner(ctx, owner, id, winner)
	if errors.Is(err, store.ErrNotMember) {
		return nil, FieldErrors{"winnerAssetId": "must be one of the cluster's assets"}
	}
	return cl, err
}
