package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
)

// What a gallery's viewers may hold and leave.
const (
	viewerTTL = 24 * time.Hour
	// visitorTTL is how long the token of a visitor who named themself
	// lasts: a client comes back to choose over days, from the same
	// browser, and finds their hearts where they left them.
	visitorTTL     = 30 * 24 * time.Hour
	viewerPrefix   = "lbv_"
	maxLiveViewers = 1000
)

// CommentCaps bound what viewers write: so many comments a viewer, so
// many a gallery.
var CommentCaps = store.CommentCaps{PerViewer: 50, PerGallery: 5000}

// JoinGallery makes the caller a viewer of g and returns the viewer's
// token, which reaches g alone. A visitor who named themself (who) keeps
// their token for weeks, so their choices stay theirs when they come
// back; an anonymous one for a day. A gallery with as many live viewers
// as it takes refuses with store.ViewerLimitError.
func (a *App) JoinGallery(ctx context.Context, g *store.Gallery, who *store.Visitor) (string, *store.Viewer, error) {
	token := store.NewSecret(viewerPrefix)
	ttl := viewerTTL
	if who != nil {
		ttl = visitorTTL
	}
	v, err := a.store.CreateViewer(ctx, g, store.HashSecret(token), ttl, maxLiveViewers, who)
	return token, v, err
}

// Favorite marks asset of g as v's choice, or unmarks it (on false),
// within g's selection limit (store.ErrSelectionLimit), and tells the
// owner's open views. It returns the photo's favourites and how many v
// has chosen.
func (a *App) Favorite(ctx context.Context, log *slog.Logger, g *store.Gallery, v *store.Viewer, asset uuid.UUID, on bool) (count, chosen int, err error) {
	count, chosen, err = a.store.Favorite(ctx, g.ID, asset, v.ID, on, g.SelectionLimit)
	if err != nil {
		return 0, 0, err
	}
	a.galleryChanged(ctx, log, g.ProjectID, g.ID, nil, map[string]any{"assetId": asset, "favorite": on})
	return count, chosen, nil
}

// Comment records v's comment text on asset of g, within CommentCaps
// (store.ErrViewerComments, store.ErrGalleryComments), and tells the
// owner's open views. It returns the comment and the photo's comments.
func (a *App) Comment(ctx context.Context, log *slog.Logger, g *store.Gallery, v *store.Viewer, asset uuid.UUID, text string) (*store.Comment, int, error) {
	cm, n, err := a.store.AddComment(ctx, g.ID, asset, v.ID, text, CommentCaps)
	if err != nil {
		return nil, 0, err
	}
	a.galleryChanged(ctx, log, g.ProjectID, g.ID, nil, map[string]any{"assetId": asset, "commentId": cm.ID})
	return cm, n, nil
}
