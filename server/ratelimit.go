package server

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"
)

// limits are the budgets, shared through Redis by every server process, as
// token buckets refilled per minute: per user, and per client address for
// what comes before a key is known.
type limits struct {
	rl *redis_rate.Limiter
	// errors counts requests let through because Redis could not answer
	// the limiter; /readyz reports it.
	errors  *atomic.Int64
	api     redis_rate.Limit
	uploads redis_rate.Limit
	// Per client address.
	signIn       redis_rate.Limit
	authFailures redis_rate.Limit
	readyz       redis_rate.Limit
}

func perMinute(rate, burst int) redis_rate.Limit {
	return redis_rate.Limit{Rate: rate, Burst: burst, Period: time.Minute}
}

// perPeriod is a budget of n per period, all of it usable at once.
func perPeriod(n int, period time.Duration) redis_rate.Limit {
	return redis_rate.Limit{Rate: n, Burst: n, Period: period}
}

// rateLimit spends one API request from the caller's budget and says so in
// the X-RateLimit-* headers of every answer.
func (s *Server) rateLimit(c *gin.Context) {
	if s.allow(c, "api:"+principal(c).ID.String(), s.limits.api, 1) {
		c.Next()
	}
}

// perAddress spends one request from the client address's budget: the
// address is the peer's, or what a TRUSTED_PROXIES proxy says it is.
func (s *Server) perAddress(budget string, limit redis_rate.Limit) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.allow(c, budget+":"+c.ClientIP(), limit, 1) {
			c.Next()
		}
	}
}

// failedCredential spends one failure from the client address's budget
// and returns e, or a 429 once the address has failed too often. Only
// failures count: a good key from the same address (a shared NAT, say)
// still works, and keys of 256 random bits are not guessed at any rate; the
// budget keeps a flood of bad keys off the database and the logs.
func (s *Server) failedCredential(c *gin.Context, e *Error) error {
	if err := s.spend(c, "auth_failures:"+c.ClientIP(), s.limits.authFailures, 1); err != nil {
		return err
	}
	return e
}

// allow spends n from a budget and answers 429 when it cannot.
func (s *Server) allow(c *gin.Context, key string, limit redis_rate.Limit, n int) bool {
	if err := s.spend(c, key, limit, n); err != nil {
		fail(c, err)
		return false
	}
	return true
}

// spend takes n from a budget, says what is left in the X-RateLimit-*
// headers, and returns a 429 when it cannot. When Redis does not answer,
// the request goes on: a limiter outage must not become an API outage.
func (s *Server) spend(c *gin.Context, key string, limit redis_rate.Limit, n int) *Error {
	if n > limit.Burst {
		// More than the bucket ever holds: no wait makes it pass, so say
		// how much fits at once instead of a Retry-After.
		c.Writer.Header().Set("X-RateLimit-Limit", strconv.Itoa(limit.Burst))
		s.metrics.refusedBy(key)
		return apiError(http.StatusTooManyRequests, "rate_limited", "This asks for %d at once; at most %d fit at once.", n, limit.Burst).
			with("retryAfter", nil).with("maxAtOnce", limit.Burst)
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 500*time.Millisecond)
	defer cancel()
	res, err := s.limits.rl.AllowN(ctx, key, limit, n)
	if err != nil {
		s.limits.errors.Add(1)
		logger(c).Warn("rate limiter unavailable; request allowed", "err", err)
		return nil
	}
	h := c.Writer.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit.Burst))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(ceilSeconds(res.ResetAfter)))
	if res.Allowed >= n {
		return nil
	}
	s.metrics.refusedBy(key)
	return retryLater(c, res.RetryAfter, "rate_limited", "Too many requests")
}

// spendAlso spends one from a second budget of a request: unless it
// refuses, the answer's X-RateLimit-* headers stay those of the first,
// the budget of the route.
func (s *Server) spendAlso(c *gin.Context, key string, limit redis_rate.Limit) *Error {
	h := c.Writer.Header()
	kept := map[string][]string{}
	for _, k := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		kept[k] = h.Values(k)
	}
	if err := s.spend(c, key, limit, 1); err != nil {
		return err
	}
	for k, v := range kept {
		if h.Del(k); len(v) > 0 {
			h[k] = v
		}
	}
	return nil
}

// retryLater is a 429 with code, saying what happened and when to retry:
// in Retry-After and details.retryAfter, whole seconds, at least one.
func retryLater(c *gin.Context, wait time.Duration, code, what string) *Error {
	retry := max(1, ceilSeconds(wait))
	c.Writer.Header().Set("Retry-After", strconv.Itoa(retry))
	return apiError(http.StatusTooManyRequests, code, "%s; retry in %d s.", what, retry).with("retryAfter", retry)
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(math.Ceil(d.Seconds()))
}
