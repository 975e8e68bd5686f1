package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Idempotency keys past their window and ended sessions are deleted by the
// sweep; live ones stay.
func TestSweepPurgesExpiredKeysAndSessions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	st := h.env.Store
	for _, k := range []string{"old", "fresh"} {
		if _, err := st.ClaimIdempotencyKey(ctx, h.owner, k, "POST", "/v1/projects", []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	h.env.DB.MustExec(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'old'`)

	_, live, err := st.CreateAPIKey(ctx, h.owner, "live")
	if err != nil {
		t.Fatal(err)
	}
	_, revoked, err := st.CreateAPIKey(ctx, h.owner, "revoked")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		key uuid.UUID
		ttl time.Duration
	}{{live.ID, time.Hour}, {live.ID, -time.Hour}, {revoked.ID, time.Hour}} {
		if _, _, err := st.CreateSession(ctx, s.key, s.ttl); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RevokeAPIKey(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}

	h.sweep()
	if n := h.count(`SELECT count(*) FROM idempotency_keys`); n != 1 {
		t.Errorf("%d idempotency keys after the sweep, want the fresh one", n)
	}
	if n := h.count(`SELECT count(*) FROM sessions`); n != 1 {
		t.Errorf("%d sessions after the sweep, want the live one", n)
	}
}
