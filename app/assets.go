package app

import (
	"context"

	"github.com/google/uuid"

	"lightbox/store"
)

// UpdateAsset applies what a person notes on owner's asset id (keywords,
// notes, IPTC, their own flags; store.UpdateAsset) and returns the asset.
// The notes are the person's alone: nothing is rendered again and no
// view is told, as no other view shows them live.
func (a *App) UpdateAsset(ctx context.Context, owner, id uuid.UUID, change store.AssetChange) (*store.Asset, error) {
	return a.store.UpdateAsset(ctx, owner, id, change)
}
