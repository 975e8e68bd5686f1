package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// ErrEmailTaken is returned when a user with the same email exists.
var ErrEmailTaken = errors.New("a user with that email exists")

// User is an account. Admins may use the operator pages.
type User struct {
	ID        uuid.UUID `db:"id"`
	Email     string    `db:"email"`
	IsAdmin   bool      `db:"is_admin"`
	CreatedAt time.Time `db:"created_at"`
}

// APIKey is a key's record; the key itself is shown once and never stored.
type APIKey struct {
	ID         uuid.UUID  `db:"id"`
	UserID     uuid.UUID  `db:"user_id"`
	Name       string     `db:"name"`
	Prefix     string     `db:"prefix"`
	CreatedAt  time.Time  `db:"created_at"`
	LastUsedAt *time.Time `db:"last_used_at"`
	RevokedAt  *time.Time `db:"revoked_at"`
}

// Principal is who a request acts for.
type Principal struct {
	User
	KeyID uuid.UUID `db:"key_id"`
}

// keyPrefix marks Lightbox keys so they are recognisable in configs and leak scanners.
const keyPrefix = "lbx_"

var token32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewSecret returns a random 256-bit token with the given prefix.
func NewSecret(prefix string) string {
	b := make([]byte, 32)
	rand.Read(b)
	return prefix + strings.ToLower(token32.EncodeToString(b))
}

// HashSecret is how keys and session tokens are stored. They carry 256
// random bits, so a plain SHA-256 is as strong as a slow hash here and keeps
// every authenticated request to one indexed lookup.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// CreateUser adds a user.
func (s *Store) CreateUser(ctx context.Context, email string, admin bool) (*User, error) {
	u := &User{}
	err := s.db.GetContext(ctx, u, `
		INSERT INTO users (id, email, is_admin) VALUES ($1, $2, $3)
		RETURNING id, email, is_admin, created_at`, uuid.New(), email, admin)
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "23505" {
		return nil, ErrEmailTaken
	}
	return u, err
}

// UserByEmail finds a user by email, ignoring case.
func (s *Store) UserByEmail(ctx context.Context, email string) (*User, error) {
	u := &User{}
	err := s.db.GetContext(ctx, u, `SELECT id, email, is_admin, created_at FROM users WHERE lower(email) = lower($1)`, email)
	return u, notFound(err)
}

// CreateAPIKey makes a new key for a user and returns it with its record.
// The key is returned only here.
func (s *Store) CreateAPIKey(ctx context.Context, userID uuid.UUID, name string) (string, *APIKey, error) {
	secret := NewSecret(keyPrefix)
	k := &APIKey{}
	err := s.db.GetContext(ctx, k, `
		INSERT INTO api_keys (id, user_id, name, prefix, key_hash) VALUES ($1, $2, $3, $4, $5)
		RETURNING id, user_id, name, prefix, created_at, last_used_at, revoked_at`,
		uuid.New(), userID, name, secret[:len(keyPrefix)+6], HashSecret(secret))
	if err != nil {
		return "", nil, notFound(err)
	}
	return secret, k, nil
}

// RevokeAPIKeyNamed revokes key if its name begins with prefix, and
// does nothing otherwise.
func (s *Store) RevokeAPIKeyNamed(ctx context.Context, keyID uuid.UUID, prefix string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE api_keys SET revoked_at = now()
		WHERE id = $1 AND revoked_at IS NULL AND starts_with(name, $2)`, keyID, prefix)
	return err
}

// RevokeAPIKey revokes a key; its sessions end with it.
func (s *Store) RevokeAPIKey(ctx context.Context, keyID uuid.UUID) error {
	res, err := s.db.ExecContext(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, keyID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// ListAPIKeys lists a user's keys, newest first.
func (s *Store) ListAPIKeys(ctx context.Context, userID uuid.UUID) ([]APIKey, error) {
	var keys []APIKey
	err := s.db.SelectContext(ctx, &keys, `
		SELECT id, user_id, name, prefix, created_at, last_used_at, revoked_at
		FROM api_keys WHERE user_id = $1 ORDER BY created_at DESC`, userID)
	return keys, err
}

// keyTouchEvery is how stale api_keys.last_used_at may be: writing it on
// every request made each authenticated call a row update.
const keyTouchEvery = time.Minute

// PrincipalByAPIKey resolves a live key to its user, and records its use
// at most once per keyTouchEvery.
func (s *Store) PrincipalByAPIKey(ctx context.Context, secret string) (*Principal, error) {
	p := &Principal{}
	err := s.db.GetContext(ctx, p, `
		WITH live AS (
			SELECT u.id, u.email, u.is_admin, u.created_at, k.id AS key_id
			FROM api_keys k JOIN users u ON u.id = k.user_id
			WHERE k.key_hash = $1 AND k.revoked_at IS NULL
		), touched AS (
			UPDATE api_keys SET last_used_at = now()
			WHERE id = (SELECT key_id FROM live) AND (last_used_at IS NULL OR last_used_at < now() - $2::interval)
		)
		SELECT id, email, is_admin, created_at, key_id FROM live`, HashSecret(secret), keyTouchEvery.String())
	return p, notFound(err)
}

// CreateSession opens a browser session for a key until ttl passes and
// returns its token.
func (s *Store) CreateSession(ctx context.Context, keyID uuid.UUID, ttl time.Duration) (string, time.Time, error) {
	token := NewSecret("")
	expires := time.Now().Add(ttl).UTC()
	_, err := s.db.ExecContext(ctx, `INSERT INTO sessions (token_hash, api_key_id, expires_at) VALUES ($1, $2, $3)`,
		HashSecret(token), keyID, expires)
	return token, expires, err
}

// PrincipalBySession resolves a live session whose key is not revoked.
func (s *Store) PrincipalBySession(ctx context.Context, token string) (*Principal, error) {
	p := &Principal{}
	err := s.db.GetContext(ctx, p, `
		SELECT u.id, u.email, u.is_admin, u.created_at, k.id AS key_id
		FROM sessions s JOIN api_keys k ON k.id = s.api_key_id JOIN users u ON u.id = k.user_id
		WHERE s.token_hash = $1 AND s.expires_at > now() AND k.revoked_at IS NULL`, HashSecret(token))
	return p, notFound(err)
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, token string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE token_hash = $1`, HashSecret(token))
	return err
}

// PrincipalByKeyID resolves a live key by its id, for stream tokens that
// stand for it.
func (s *Store) PrincipalByKeyID(ctx context.Context, keyID uuid.UUID) (*Principal, error) {
	p := &Principal{}
	err := s.db.GetContext(ctx, p, `
		SELECT u.id, u.email, u.is_admin, u.created_at, k.id AS key_id
		FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.id = $1 AND k.revoked_at IS NULL`, keyID)
	return p, notFound(err)
}
