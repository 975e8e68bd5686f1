package store

import (
	"context"
	"crypto/subtle"
	"errors"
	"time"

	"github.com/google/uuid"
)

// Challenge is a sign-in code waiting to be entered.
type Challenge struct {
	ID        uuid.UUID  `db:"id"`
	Email     string     `db:"email"`
	UserID    *uuid.UUID `db:"user_id"` // nil for an address no user has
	CodeHash  []byte     `db:"code_hash"`
	Attempts  int        `db:"attempts"`
	ExpiresAt time.Time  `db:"expires_at"`
	UsedAt    *time.Time `db:"used_at"`
}

const challengeColumns = `id, email, user_id, code_hash, attempts, expires_at, used_at`

// CreateChallenge records sign-in challenge id for email, whether or not a
// user has that address (then no code ever matches); UserID says which.
func (s *Store) CreateChallenge(ctx context.Context, id uuid.UUID, email string, codeHash []byte, ttl time.Duration) (*Challenge, error) {
	c := &Challenge{}
	err := s.db.GetContext(ctx, c, `
		INSERT INTO sign_in_challenges (id, email, user_id, code_hash, expires_at)
		VALUES ($1, $2, (SELECT id FROM users WHERE lower(email) = lower($2)), $3, now() + $4::interval)
		RETURNING `+challengeColumns,
		id, email, codeHash, ttl.String())
	return c, err
}

// ChallengeByID reads a challenge, to know whose code is being tried
// before the try is counted and checked.
func (s *Store) ChallengeByID(ctx context.Context, id uuid.UUID) (*Challenge, error) {
	c := &Challenge{}
	err := s.db.GetContext(ctx, c, `SELECT `+challengeColumns+` FROM sign_in_challenges WHERE id = $1`, id)
	return c, notFound(err)
}

// Live reports whether a code may still be tried against c.
func (c *Challenge) Live(maxAttempts int) bool {
	return c.UsedAt == nil && c.Attempts < maxAttempts && time.Now().Before(c.ExpiresAt)
}

// Sign-in refusals.
var (
	ErrWrongCode   = errors.New("store: the code is wrong")
	ErrCodeExpired = errors.New("store: the code expired, was used, or was tried too often")
)

// UseChallenge checks codeHash against challenge id and, when it matches,
// marks it used and returns its user. Every wrong try counts; after
// maxAttempts the challenge is spent. An unknown address's challenge
// answers ErrWrongCode like any wrong code.
func (s *Store) UseChallenge(ctx context.Context, id uuid.UUID, codeHash []byte, maxAttempts int) (*User, error) {
	var u *User
	var refusal error // returned after the commit, so a wrong try counts
	err := s.WithTx(ctx, func(tx *Store) error {
		c := &Challenge{}
		err := tx.db.GetContext(ctx, c, `SELECT `+challengeColumns+` FROM sign_in_challenges WHERE id = $1 FOR UPDATE`, id)
		if err != nil {
			if errors.Is(notFound(err), ErrNotFound) {
				return ErrCodeExpired
			}
			return err
		}
		if !c.Live(maxAttempts) {
			return ErrCodeExpired
		}
		if c.UserID == nil || subtle.ConstantTimeCompare(c.CodeHash, codeHash) != 1 {
			refusal = ErrWrongCode
			_, err := tx.db.ExecContext(ctx, `UPDATE sign_in_challenges SET attempts = attempts + 1 WHERE id = $1`, id)
			return err
		}
		if _, err := tx.db.ExecContext(ctx, `UPDATE sign_in_challenges SET used_at = now() WHERE id = $1`, id); err != nil {
			return err
		}
		u = &User{}
		return tx.db.GetContext(ctx, u, `SELECT id, email, is_admin, created_at FROM users WHERE id = $1`, *c.UserID)
	})
	if err == nil && refusal != nil {
		return nil, refusal
	}
	return u, err
}

// Tokens is what a signed-in device holds: a short-lived access token and
// the refresh token that gets the next pair.
type Tokens struct {
	Access, Refresh string
	AccessExpires   time.Time
}

// Token prefixes tell the two apart from API keys in a Bearer header.
const (
	AccessPrefix  = "lba_"
	RefreshPrefix = "lbr_"
)

// IssueTokens gives key a new access token (a session of the key) for
// accessTTL and a refresh token for refreshTTL.
func (s *Store) IssueTokens(ctx context.Context, keyID uuid.UUID, accessTTL, refreshTTL time.Duration) (*Tokens, error) {
	t := &Tokens{Access: NewSecret(AccessPrefix), Refresh: NewSecret(RefreshPrefix), AccessExpires: time.Now().Add(accessTTL).UTC()}
	err := s.WithTx(ctx, func(tx *Store) error {
		if _, err := tx.db.ExecContext(ctx, `INSERT INTO sessions (token_hash, api_key_id, expires_at) VALUES ($1, $2, $3)`,
			HashSecret(t.Access), keyID, t.AccessExpires); err != nil {
			return err
		}
		_, err := tx.db.ExecContext(ctx, `INSERT INTO refresh_tokens (token_hash, api_key_id, expires_at) VALUES ($1, $2, now() + $3::interval)`,
			HashSecret(t.Refresh), keyID, refreshTTL.String())
		return err
	})
	return t, err
}

// ErrRefreshReused says a refresh token came back after it was used: a
// copy is in someone else's hands, so the device's key was revoked.
var ErrRefreshReused = errors.New("store: refresh token used twice; its key is revoked")

// UseRefreshToken spends a live refresh token and returns its principal.
// A token used before revokes its key and answers ErrRefreshReused; an
// unknown, expired or revoked one answers ErrNotFound.
func (s *Store) UseRefreshToken(ctx context.Context, token string) (*Principal, error) {
	var p *Principal
	var refusal error // returned after the commit, so the revocation stands
	hash := HashSecret(token)
	err := s.WithTx(ctx, func(tx *Store) error {
		var r struct {
			KeyID  uuid.UUID  `db:"api_key_id"`
			UsedAt *time.Time `db:"used_at"`
		}
		err := tx.db.GetContext(ctx, &r, `SELECT api_key_id, used_at FROM refresh_tokens
			WHERE token_hash = $1 AND expires_at > now() FOR UPDATE`, hash)
		if err != nil {
			return notFound(err)
		}
		if r.UsedAt != nil {
			refusal = ErrRefreshReused
			_, err := tx.db.ExecContext(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, r.KeyID)
			return err
		}
		if _, err := tx.db.ExecContext(ctx, `UPDATE refresh_tokens SET used_at = now() WHERE token_hash = $1`, hash); err != nil {
			return err
		}
		p, err = tx.PrincipalByKeyID(ctx, r.KeyID)
		return err
	})
	if err == nil && refusal != nil {
		return nil, refusal
	}
	return p, err
}
