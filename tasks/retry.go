package tasks

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"
)

// RetryDelay is the worker's asynq.RetryDelayFunc: each type's schedule from
// the task table, with ±20% jitter so a burst of failures does not come back
// as a burst. A rate-limited task comes back when the limiter says.
func RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		return jitter(rl.RetryAfter)
	}
	s := table[t.Type()].schedule
	if len(s) == 0 {
		return jitter(10 * time.Second)
	}
	if n >= len(s) {
		n = len(s) - 1
	}
	return jitter(s[n])
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Second
	}
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Permanent marks err as one no retry can fix (bad input): the task fails
// at once and is archived.
func Permanent(err error) error {
	return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
}

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool { return errors.Is(err, asynq.SkipRetry) }

// RateLimitedError says an outside service's shared budget is spent. The
// task is retried after RetryAfter without spending one of its retries.
type RateLimitedError struct {
	Limit      string
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("rate limited by %s: retry in %s", e.Limit, e.RetryAfter.Round(time.Millisecond))
}

// RateLimited returns a RateLimitedError.
func RateLimited(limit string, retryAfter time.Duration) error {
	return &RateLimitedError{Limit: limit, RetryAfter: retryAfter}
}

// IsFailure is the worker's asynq IsFailure: a rate-limited task did not
// fail, it waited.
func IsFailure(err error) bool {
	var rl *RateLimitedError
	return !errors.As(err, &rl)
}

// MaxRetry is how many retries a type gets.
func MaxRetry(typ string) int { return len(table[typ].schedule) }
