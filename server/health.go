package server

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"lightbox/blob"
	"lightbox/chain"
)

func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz answers 200 when Postgres, Redis and the blob store all answer,
// else 503 naming which did not. It is public, so the errors themselves
// only go to the log, and the chain shows its length but no cid.
func (s *Server) readyz(c *gin.Context) {
	ctx := c.Request.Context()
	pings := map[string]func(context.Context) error{
		"postgres": s.store.Ping,
		"redis":    func(ctx context.Context) error { return s.rdb.Ping(ctx).Err() },
	}
	if p, ok := s.blobs.(blob.Pinger); ok {
		pings["blobs"] = p.Ping
	}
	// All at once, each with its own deadline: a service that hangs must
	// not use up the time of the others and get them named too.
	var mu sync.Mutex
	var wg sync.WaitGroup
	checks := map[string]string{}
	failed := map[string]any{}
	for name, ping := range pings {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			err := ping(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				logger(c).WarnContext(ctx, "not ready", "service", name, "err", err)
				failed[name] = "unavailable"
			} else {
				checks[name] = "ok"
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		e := apiError(http.StatusServiceUnavailable, "not_ready", "A service this server needs does not answer.")
		e.Details = failed
		fail(c, e)
		return
	}
	out := gin.H{"status": "ok", "checks": checks, "limiterErrors": s.limits.errors.Load()}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if h, err := chain.ReadHead(ctx, s.store); err == nil {
		out["chain"] = gin.H{"seq": h.Seq, "updatedAt": h.UpdatedAt}
	}
	if s.inspector != nil {
		queues := map[string]any{}
		for _, q := range slices.Sorted(maps.Keys(s.cfg.QueueWeights)) {
			if info, err := s.inspector.GetQueueInfo(q); err == nil {
				queues[q] = gin.H{"size": info.Size, "pending": info.Pending, "active": info.Active, "scheduled": info.Scheduled,
					"retry": info.Retry, "archived": info.Archived, "latencyMs": info.Latency.Milliseconds(), "paused": info.Paused}
			}
		}
		out["queues"] = queues
	}
	c.JSON(http.StatusOK, out)
}
