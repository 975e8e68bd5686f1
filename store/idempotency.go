package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"

	"lightbox/ptr"
)

// IdempotencyWindow is how long an answer stays replayable.
const IdempotencyWindow = 24 * time.Hour

// IdempotencyClaimStale is how long a claim may go unanswered before it
// counts as abandoned: its request's process died (or the handler
// panicked) before answering or releasing it, and a retry must not wait
// out the whole window. No request runs this long.
const IdempotencyClaimStale = 10 * time.Minute

// Idempotency outcomes when a request claims a key.
var (
	ErrIdempotencyReused   = errors.New("idempotency key reused with another request")
	ErrIdempotencyInFlight = errors.New("a request with this idempotency key is in progress")
)

// SavedResponse is a first answer, replayed for repeats.
type SavedResponse struct {
	StatusCode  int    `db:"status_code"`
	ContentType string `db:"content_type"`
	Body        []byte `db:"body"`
}

// ClaimIdempotencyKey records that a request with key is starting. It
// returns the saved answer when the same request already finished, or nil
// when the caller should go ahead. Keys older than the window are
// forgotten, and so are claims abandoned unanswered (IdempotencyClaimStale).
func (s *Store) ClaimIdempotencyKey(ctx context.Context, user uuid.UUID, key, method, path string, reqHash []byte) (*SavedResponse, error) {
	for range 5 {
		saved, err := s.claimIdempotencyKey(ctx, user, key, method, path, reqHash)
		if errors.Is(err, errClaimReleased) {
			continue // released between our insert and select: claim again
		}
		return saved, err
	}
	return nil, ErrIdempotencyInFlight // others keep taking it: retry shortly
}

var errClaimReleased = errors.New("idempotency claim released while read")

func (s *Store) claimIdempotencyKey(ctx context.Context, user uuid.UUID, key, method, path string, reqHash []byte) (*SavedResponse, error) {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2
		AND (created_at < now() - $3::interval OR (status_code IS NULL AND created_at < now() - $4::interval))`,
		user, key, IdempotencyWindow.String(), IdempotencyClaimStale.String()); err != nil {
		return nil, err
	}
	res, err := s.db.ExecContext(ctx, `
		INSERT INTO idempotency_keys (user_id, key, method, path, request_hash)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (user_id, key) DO NOTHING`,
		user, key, method, path, reqHash)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil, nil
	}
	var row struct {
		Method      string  `db:"method"`
		Path        string  `db:"path"`
		RequestHash []byte  `db:"request_hash"`
		StatusCode  *int    `db:"status_code"`
		ContentType *string `db:"content_type"`
		Body        []byte  `db:"body"`
	}
	err = s.db.GetContext(ctx, &row, `
		SELECT method, path, request_hash, status_code, content_type, body
		FROM idempotency_keys WHERE user_id = $1 AND key = $2`, user, key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errClaimReleased
	}
	if err != nil {
		return nil, err
	}
	if row.Method != method || row.Path != path || !bytes.Equal(row.RequestHash, reqHash) {
		return nil, ErrIdempotencyReused
	}
	if row.StatusCode == nil {
		return nil, ErrIdempotencyInFlight
	}
	return &SavedResponse{StatusCode: *row.StatusCode, ContentType: ptr.Value(row.ContentType), Body: row.Body}, nil
}

// SaveIdempotentResponse stores the first answer to replay.
func (s *Store) SaveIdempotentResponse(ctx context.Context, user uuid.UUID, key string, r SavedResponse) error {
	_, err := s.db.ExecContext(ctx, `
		UPDATE idempotency_keys SET status_code = $3, content_type = $4, body = $5
		WHERE user_id = $1 AND key = $2`, user, key, r.StatusCode, r.ContentType, r.Body)
	return err
}

// ReleaseIdempotencyKey forgets a claim whose request failed before it had
// an answer worth replaying, so the client may try again.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, user uuid.UUID, key string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND status_code IS NULL`, user, key)
	return err
}
