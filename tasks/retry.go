package tasks

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"
)

// RetryDelay is the worker's asynq.RetryDelayFunc: each type's schedule from
// the task table, with ±20% jitter so a burst of failures does not come back
// as a burst. A rate-limited task comes back when the limiter says.
//
// The jitter is drawn from the task's payload and retry number rather than
// at random, so the job-state middleware computes the same next run time
// that Asynq schedules.
func RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	seed := fnv.New64a()
	seed.Write([]byte(t.Type()))
	seed.Write(t.Payload())
	binary.Write(seed, binary.LittleEndian, int64(n))
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		return jitter(rl.RetryAfter, seed.Sum64())
	}
	s := table[t.Type()].retries
	if len(s) == 0 {
		return jitter(10*time.Second, seed.Sum64())
	}
	if n >= len(s) {
		n = len(s) - 1
	}
	return jitter(s[n], seed.Sum64())
}

func jitter(d time.Duration, seed uint64) time.Duration {
	if d <= 0 {
		return time.Second
	}
	r := rand.New(rand.NewPCG(seed, seed>>1))
	return time.Duration(float64(d) * (0.8 + 0.4*r.Float64()))
}

// Permanent marks err as one no retry can fix (bad input): the task fails
// at once and is archived.
func Permanent(err error) error {
	return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
}

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool { return errors.Is(err, asynq.SkipRetry) }

// RateLimitedError says an outside service's shared budget is spent, or,
// with a Cause, that the service does not answer. Either is waited out:
// the task is retried after RetryAfter without spending one of its
// retries.
type RateLimitedError struct {
	Limit      string
	RetryAfter time.Duration
	Cause      error // the outage; nil for a spent budget
}

func (e *RateLimitedError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s does not answer (%v): retry in %s", e.Limit, e.Cause, e.RetryAfter.Round(time.Millisecond))
	}
	return fmt.Sprintf("rate limited by %s: retry in %s", e.Limit, e.RetryAfter.Round(time.Millisecond))
}

func (e *RateLimitedError) Unwrap() error { return e.Cause }

// Unavailable says service does not answer (cause): the task waits for it
// as for a spent budget, so an outage fails nothing.
func Unavailable(service string, retryAfter time.Duration, cause error) error {
	return &RateLimitedError{Limit: service, RetryAfter: retryAfter, Cause: cause}
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
func MaxRetry(typ string) int { return len(table[typ].retries) }
