package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
)

// streamCounts counts each user's open streams, up to max (the config's
// SSE_STREAMS_PER_USER): each holds a connection, a goroutine and a place
// in the hub. The web page opens one per project tab.
type streamCounts struct {
	max int
	mu  sync.Mutex
	n   map[uuid.UUID]int
}

// acquire takes one of user's stream places, or reports that none is free.
func (sc *streamCounts) acquire(user uuid.UUID) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.n == nil {
		sc.n = map[uuid.UUID]int{}
	}
	if sc.n[user] >= sc.max {
		return false
	}
	sc.n[user]++
	return true
}

func (sc *streamCounts) release(user uuid.UUID) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.n[user]--; sc.n[user] <= 0 {
		delete(sc.n, user)
	}
}

// untilKeyRevoked returns a context that ends with ctx or, at the latest
// one check after the key a stream was opened with is revoked: a stream
// lasts for hours, and must not outlive its credentials.
func (s *Server) untilKeyRevoked(ctx context.Context, keyID uuid.UUID) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	every := max(4*s.cfg.SSEHeartbeat, time.Second)
	// A timer rather than a goroutine per stream: thousands of streams
	// would otherwise each hold a parked goroutine's stack for this.
	var (
		mu sync.Mutex // orders setting t with its use by check
		t  *time.Timer
	)
	check := func() {
		if ctx.Err() != nil {
			return
		}
		if _, err := s.store.PrincipalByKeyID(ctx, keyID); errors.Is(err, store.ErrNotFound) {
			cancel()
			return
		}
		mu.Lock()
		t.Reset(every)
		mu.Unlock()
	}
	mu.Lock()
	t = time.AfterFunc(every, check)
	mu.Unlock()
	return ctx, func() {
		mu.Lock()
		t.Stop()
		mu.Unlock()
		cancel()
	}
}
