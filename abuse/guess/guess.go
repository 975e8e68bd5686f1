// Package guess counts guesses at a secret (a sign-in code, say) in Redis,
// before each guess is checked, and slows the guesser down with growing
// delays rather than locking anyone out. A guess is counted in several
// scopes at once (the target, the address it comes from, everything), in
// one Redis step, so guesses sent together are counted like guesses sent
// one after another, on every server process.
//
// Counter slows each scope with a delay after its last guess. Turns, for a
// target anyone may guess at from anywhere (a gallery's password), refuses
// an address past its guesses and otherwise hands out turns, one address
// at a time, so the target's rightful user waits for the turns before its
// own and is never locked out by a guesser asking faster.
package guess

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Rule is how one scope slows guessing. The first Free failures pass at
// once; after that a guess waits Base·2^(n−Free) after the one before, at
// most Max, where n is the failures counted. One failure is forgotten per
// Forget without a guess, so a quiet scope opens again.
type Rule struct {
	Free   int
	Base   time.Duration
	Max    time.Duration
	Forget time.Duration
}

// Scope is a count kept under Key (a Redis key) by Rule.
type Scope struct {
	Key  string
	Rule Rule
}

// Delay is the wait Rule puts after the guess before, once n failures are
// counted.
func (r Rule) Delay(n int) time.Duration {
	if n < r.Free {
		return 0
	}
	if k := n - r.Free; k < 62 && r.Base<<k>>k == r.Base {
		return min(r.Base<<k, r.Max)
	}
	return r.Max
}

// takeScript counts a guess in every scope of KEYS, or in none: ARGV holds
// now (ms), then per key Free, Base, Max and Forget (ms). It returns 0, or
// the milliseconds to wait when any scope's delay since its last guess has
// not passed, and then counts nothing. Each count is a hash {n, t}: the
// failures and when the last guess came.
var takeScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local wait = 0
local counts = {}
for i, key in ipairs(KEYS) do
  local o = 1 + (i - 1) * 4
  local free, base, max, forget = tonumber(ARGV[o+1]), tonumber(ARGV[o+2]), tonumber(ARGV[o+3]), tonumber(ARGV[o+4])
  local st = redis.call('HMGET', key, 'n', 't')
  local n, t = tonumber(st[1]) or 0, tonumber(st[2]) or 0
  if n > 0 and now > t then
    n = math.max(0, n - math.floor((now - t) / forget))
  end
  counts[i] = n
  if n >= free then
    local w = t + math.min(base * 2 ^ (n - free), max) - now
    if w > wait then wait = w end
  end
end
if wait > 0 then
  return math.ceil(wait)
end
for i, key in ipairs(KEYS) do
  local o = 1 + (i - 1) * 4
  local n = counts[i] + 1
  redis.call('HSET', key, 'n', n, 't', now)
  redis.call('PEXPIRE', key, math.ceil(n * tonumber(ARGV[o+4]) + tonumber(ARGV[o+3])))
end
return 0
`)

// forgiveScript takes back one guess from every scope of KEYS.
var forgiveScript = redis.NewScript(`
for _, key in ipairs(KEYS) do
  local n = tonumber(redis.call('HGET', key, 'n') or '0')
  if n > 0 then redis.call('HSET', key, 'n', n - 1) end
end
return 0
`)

// Counter keeps the counts in Redis.
type Counter struct {
	rdb redis.Scripter
}

// New keeps the counts in rdb.
func New(rdb redis.Scripter) *Counter { return &Counter{rdb: rdb} }

// Take counts one guess at now in every scope, before it is checked, and
// returns 0. When any scope says the guesser must wait, it counts nothing
// and returns the longest wait.
func (c *Counter) Take(ctx context.Context, now time.Time, scopes ...Scope) (time.Duration, error) {
	keys := make([]string, len(scopes))
	args := make([]any, 0, 1+4*len(scopes))
	args = append(args, now.UnixMilli())
	for i, s := range scopes {
		if s.Rule.Forget <= 0 {
			return 0, fmt.Errorf("guess: scope %s forgets nothing", s.Key)
		}
		keys[i] = s.Key
		args = append(args, s.Rule.Free, s.Rule.Base.Milliseconds(), s.Rule.Max.Milliseconds(), s.Rule.Forget.Milliseconds())
	}
	ms, err := takeScript.Run(ctx, c.rdb, keys, args...).Int64()
	return time.Duration(ms) * time.Millisecond, err
}

// Forgive takes back the guess Take counted in every scope: the guess was
// right, so it was no failure.
func (c *Counter) Forgive(ctx context.Context, scopes ...Scope) error {
	keys := make([]string, len(scopes))
	for i, s := range scopes {
		keys[i] = s.Key
	}
	return forgiveScript.Run(ctx, c.rdb, keys).Err()
}
