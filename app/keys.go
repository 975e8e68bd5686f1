package app

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
)

// Session is a browser's session: the token its cookie holds, and when
// it ends.
type Session struct {
	Token   string
	Expires time.Time
}

// StartSession opens a session of ttl for an API key the caller proved to
// hold, so a browser keeps a cookie rather than the key.
func (a *App) StartSession(ctx context.Context, key uuid.UUID, ttl time.Duration) (Session, error) {
	return startSession(ctx, a.store, key, ttl)
}

func startSession(ctx context.Context, tx *store.Store, key uuid.UUID, ttl time.Duration) (Session, error) {
	token, expires, err := tx.CreateSession(ctx, key, ttl)
	return Session{Token: token, Expires: expires}, err
}

// EndSession ends the browser session of token, of key. A session made by
// a mailed code had a key of its own (FinishWebSignIn), which goes with
// it; a session of an API key leaves the key alone.
func (a *App) EndSession(ctx context.Context, key uuid.UUID, token string) error {
	return a.store.WithTx(ctx, func(tx *store.Store) error {
		if err := tx.DeleteSession(ctx, token); err != nil {
			return err
		}
		return tx.RevokeAPIKeyNamed(ctx, key, webKey+" ")
	})
}

// SignOutDevice revokes the key of a device signed in by mail
// (FinishSignIn), with its access and refresh tokens, so the refresh
// token cannot bring the device back. A key revoked already is no error:
// the device is signed out either way.
func (a *App) SignOutDevice(ctx context.Context, key uuid.UUID) error {
	if err := a.store.RevokeAPIKey(ctx, key); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}
