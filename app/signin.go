package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
)

// Sign-in by a code sent by mail (seed 002's flow).
const (
	codeTTL      = 10 * time.Minute
	codeAttempts = 5
	accessTTL    = time.Hour
	refreshTTL   = 30 * 24 * time.Hour
)

// The names of the keys a sign-in gives a device, dated; a web sign-in's
// key is revoked with its session (EndSession).
const (
	deviceKey = "sign-in"
	webKey    = "web sign-in"
)

// Mail is a mail to send.
type Mail struct{ To, Subject, Body string }

// StartSignIn records a sign-in challenge for email and returns it with
// the mail that carries its code, or a nil mail when no user has the
// address: the challenge is recorded all the same, so the caller can
// answer alike. The sender lives with the server, which also knows when
// the mail may go without the answer's timing telling the two apart, so
// the mail is handed back rather than sent here.
func (a *App) StartSignIn(ctx context.Context, email string) (uuid.UUID, *Mail, error) {
	code, err := newCode()
	if err != nil {
		return uuid.Nil, nil, err
	}
	id := uuid.New()
	ch, err := a.store.CreateChallenge(ctx, id, email, codeHash(id, code), codeTTL)
	if err != nil {
		return uuid.Nil, nil, err
	}
	if ch.UserID == nil {
		return id, nil, nil
	}
	return id, &Mail{To: email, Subject: "Your Lightbox sign-in code: " + code,
		Body: fmt.Sprintf("Your Lightbox sign-in code is %s.\n\nIt works once, for %d minutes. If you did not ask to sign in, ignore this mail.\n",
			code, int(codeTTL.Minutes()))}, nil
}

// Guesses counts the sign-in codes tried at a mailbox, so that guessing
// slows down; the caller keeps the counts, by client address and the
// like.
type Guesses interface {
	// Take counts a code about to be checked; an error refuses the check.
	Take(ctx context.Context, mailbox string) error
	// Forgive takes a right code back from the counts, as it was no failure.
	Forgive(ctx context.Context, mailbox string)
}

// FinishSignIn exchanges challenge's code, counted in g before it is
// checked, for a device's tokens: an access token for an hour and a
// refresh token, both of a new API key of the device's own, so signing
// the device out revokes it alone. A wrong code is store.ErrWrongCode; a
// challenge expired, used or tried too often is store.ErrCodeExpired.
func (a *App) FinishSignIn(ctx context.Context, g Guesses, challenge uuid.UUID, code string) (*store.Principal, *store.Tokens, error) {
	var t *store.Tokens
	p, err := a.signIn(ctx, g, challenge, code, deviceKey, func(tx *store.Store, key uuid.UUID) (err error) {
		t, err = tx.IssueTokens(ctx, key, accessTTL, refreshTTL)
		return err
	})
	return p, t, err
}

// FinishWebSignIn is FinishSignIn for a browser: its key holds a session
// of ttl instead of tokens, and goes with it when it ends.
func (a *App) FinishWebSignIn(ctx context.Context, g Guesses, challenge uuid.UUID, code string, ttl time.Duration) (*store.Principal, Session, error) {
	var s Session
	p, err := a.signIn(ctx, g, challenge, code, webKey, func(tx *store.Store, key uuid.UUID) (err error) {
		s, err = startSession(ctx, tx, key, ttl)
		return err
	})
	return p, s, err
}

// signIn checks challenge's code and gives its user a new key named for
// the device, which open gives its credential in the same transaction.
func (a *App) signIn(ctx context.Context, g Guesses, challenge uuid.UUID, code, device string,
	open func(tx *store.Store, key uuid.UUID) error) (*store.Principal, error) {
	u, err := a.useCode(ctx, g, challenge, code)
	if err != nil {
		return nil, err
	}
	p := &store.Principal{User: *u}
	err = a.store.WithTx(ctx, func(tx *store.Store) error {
		_, key, err := tx.CreateAPIKey(ctx, u.ID, device+" "+time.Now().UTC().Format("2006-01-02"))
		if err != nil {
			return err
		}
		p.KeyID = key.ID
		return open(tx, key.ID)
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// useCode checks code against challenge id, counted in g before the
// check; a right code is taken back from the counts. The check commits on
// its own, before anything else is written: a wrong try must count even
// if what follows fails.
func (a *App) useCode(ctx context.Context, g Guesses, id uuid.UUID, code string) (*store.User, error) {
	ch, err := a.store.ChallengeByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !ch.Live(codeAttempts)) {
		return nil, store.ErrCodeExpired // no code is tried, so nothing is counted
	}
	if err != nil {
		return nil, err
	}
	if err := g.Take(ctx, ch.Email); err != nil {
		return nil, err
	}
	u, err := a.store.UseChallenge(ctx, id, codeHash(id, code), codeAttempts)
	if err == nil {
		g.Forgive(ctx, ch.Email)
	}
	return u, err
}

// Refresh spends a refresh token for a new pair of the same key. A
// refresh token that comes back a second time was copied: the device's
// key is revoked and the answer is store.ErrRefreshReused; an unknown,
// expired or revoked one is store.ErrNotFound.
func (a *App) Refresh(ctx context.Context, token string) (*store.Principal, *store.Tokens, error) {
	// The token is spent in a commit of its own, so a reuse's revocation
	// stands.
	p, err := a.store.UseRefreshToken(ctx, token)
	if err != nil {
		return nil, nil, err
	}
	t, err := a.store.IssueTokens(ctx, p.KeyID, accessTTL, refreshTTL)
	if err != nil {
		return nil, nil, err
	}
	return p, t, nil
}

// newCode is a uniformly random 6-digit code.
func newCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%06d", n.Int64()), nil
}

// codeHash binds a code to its challenge: the same code of another
// challenge hashes differently.
func codeHash(challenge uuid.UUID, code string) []byte {
	return store.HashSecret(challenge.String() + ":" + code)
}
