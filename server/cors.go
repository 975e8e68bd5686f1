package server

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

const (
	corsAllowMethods = "GET, POST, PUT, PATCH, DELETE"
	// What the API and a signed PUT read, beyond the headers browsers always allow.
	corsAllowHeaders = "Authorization, Content-Type, Idempotency-Key, Last-Event-ID, X-Request-Id"
	// What a page may read of an answer, beyond the headers browsers always show.
	corsExposeHeaders = "X-Request-Id, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Location, Content-Disposition"
)

// cors lets pages of the origins in CORS_ORIGINS call the API and the
// signed URLs, with credentials, and answers their preflights. Any other
// origin gets no CORS headers, so browsers keep its pages out. It runs
// before routing: preflights are OPTIONS requests, which no route takes.
func (s *Server) cors(c *gin.Context) {
	path := c.Request.URL.Path
	if len(s.cfg.CORSOrigins) == 0 || !(strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/blobs/")) {
		c.Next()
		return
	}
	h := c.Writer.Header()
	h.Add("Vary", "Origin")
	origin := c.GetHeader("Origin")
	if !slices.Contains(s.cfg.CORSOrigins, origin) {
		c.Next()
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	if c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", corsAllowMethods)
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
		h.Set("Access-Control-Max-Age", "600")
		c.AbortWithStatus(http.StatusNoContent)
		return
	}
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	c.Next()
}
