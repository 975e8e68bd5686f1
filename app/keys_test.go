package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// Signing a browser out ends its session; the key of a session made by a
// mailed code goes with it, while an API key a session was made with
// stays.
func TestEndingASessionRevokesOnlyASignInsKey(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	a := newApp(t, env, 0)
	u, err := env.Store.CreateUser(ctx, "ana@example.org", false)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		open     func() (uuid.UUID, app.Session, error)
		keyStays bool
	}{
		{"an API key's session", func() (uuid.UUID, app.Session, error) {
			_, key, err := env.Store.CreateAPIKey(ctx, u.ID, "laptop")
			if err != nil {
				return uuid.Nil, app.Session{}, err
			}
			s, err := a.StartSession(ctx, key.ID, time.Hour)
			return key.ID, s, err
		}, true},
		{"a web sign-in's session", func() (uuid.UUID, app.Session, error) {
			id, m, err := a.StartSignIn(ctx, "ana@example.org")
			if err != nil {
				return uuid.Nil, app.Session{}, err
			}
			p, s, err := a.FinishWebSignIn(ctx, &guesses{}, id, codeOf(t, m.Subject), time.Hour)
			if err != nil {
				return uuid.Nil, s, err
			}
			return p.KeyID, s, nil
		}, false},
	}
	for _, c := range cases {
		key, s, err := c.open()
		if err == nil {
			err = a.EndSession(ctx, key, s.Token)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := env.Store.PrincipalBySession(ctx, s.Token); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s after it ended: %v", c.name, err)
		}
		if _, err := env.Store.PrincipalByKeyID(ctx, key); (err == nil) != c.keyStays {
			t.Errorf("%s ended: its key answers %v; want it to stay: %v", c.name, err, c.keyStays)
		}
	}
}
