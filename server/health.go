package server

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"lightbox/chain"
)

func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz answers 200 when Postgres and Redis both answer, else 503 naming
// which did not.
func (s *Server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{}
	failed := map[string]any{}
	if err := s.store.Ping(ctx); err != nil {
		failed["postgres"] = err.Error()
	} else {
		checks["postgres"] = "ok"
	}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		failed["redis"] = err.Error()
	} else {
		checks["redis"] = "ok"
	}
	if len(failed) > 0 {
		e := apiError(http.StatusServiceUnavailable, "not_ready", "A service this server needs does not answer.")
		e.Details = failed
		fail(c, e)
		return
	}
	out := gin.H{"status": "ok", "checks": checks, "limiterErrors": s.limits.errors.Load()}
	if h, err := chain.ReadHead(ctx, s.store); err == nil {
		out["chain"] = h
	}
	if s.inspector != nil {
		queues := map[string]any{}
		for _, q := range []string{"critical", "default", "low"} {
			if info, err := s.inspector.GetQueueInfo(q); err == nil {
				queues[q] = gin.H{"size": info.Size, "pending": info.Pending, "active": info.Active, "scheduled": info.Scheduled,
					"retry": info.Retry, "archived": info.Archived, "latencyMs": info.Latency.Milliseconds(), "paused": info.Paused}
			}
		}
		out["queues"] = queues
	}
	c.JSON(http.StatusOK, out)
}
