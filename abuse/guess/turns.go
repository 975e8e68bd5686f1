package guess

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// TurnLimits are the rules of one kind of guess Turns counts.
type TurnLimits struct {
	// PerAddress guesses of one address at one target go through within
	// AddressWindow of its last one; more are refused until the window
	// lapses.
	PerAddress    int
	AddressWindow time.Duration
	// Free guesses at one target within TargetWindow of its last one go
	// through at once. After them each address waits for a turn: turns
	// come Delay apart, doubling every Step guesses, up to MaxDelay. An
	// address holds one turn at a time, so the wait of a newcomer is the
	// turns of the addresses before it, never for ever.
	Free         int
	TargetWindow time.Duration
	Delay        time.Duration
	Step         int
	MaxDelay     time.Duration
}

// turnGrace is how long a turn is kept for an address that is late for it.
const turnGrace = 30 * time.Second

// Turns counts one kind of guess per target and per address, where
// Counter's delays after the last guess would let whoever asks first
// after each delay through: a guesser asking without pause would always be
// first, and the target's rightful user, arriving from an address of its
// own, would never be. Turns hands the rightful user a turn of its own. It
// is safe for concurrent use.
type Turns struct {
	rdb    redis.Scripter
	prefix string
	limits TurnLimits
}

// NewTurns counts guesses in rdb under keys starting with prefix.
func NewTurns(rdb redis.Scripter, prefix string, l TurnLimits) *Turns {
	return &Turns{rdb: rdb, prefix: prefix, limits: l}
}

// Verdict says whether a guess may be checked now.
type Verdict struct {
	// Allowed: check it; the address has Left guesses at the target after
	// this one.
	Allowed bool
	Left    int
	// Locked: the address has used its guesses at the target. Otherwise,
	// when not Allowed, the target is guessed at too much and the address
	// has a turn in Wait.
	Locked bool
	Wait   time.Duration
}

// turnScript decides on one guess and counts it when it goes through.
// KEYS: the address's count, the target's count, the target's next free
// turn (unix ms), the address's turn (unix ms). ARGV: PerAddress,
// AddressWindow, Free, TargetWindow, Delay, MaxDelay (ms but for the
// counts), Step, turnGrace (ms). It returns {left, 0} for a guess that
// goes through, {-1, ms} for a locked address, {-2, ms} for a turn.
var turnScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local perAddress, free = tonumber(ARGV[1]), tonumber(ARGV[3])
local tries = tonumber(redis.call('GET', KEYS[1]) or '0')
if tries >= perAddress then
	return {-1, redis.call('PTTL', KEYS[1])}
end
local seen = tonumber(redis.call('GET', KEYS[2]) or '0')
if seen >= free then
	local turn = tonumber(redis.call('GET', KEYS[4]) or '0')
	if turn > now then
		return {-2, turn - now}
	elseif turn > 0 then
		redis.call('DEL', KEYS[4])
	else
		local delay = math.min(tonumber(ARGV[5]) * 2 ^ math.floor((seen - free) / tonumber(ARGV[7])), tonumber(ARGV[6]))
		local gate = math.max(now, tonumber(redis.call('GET', KEYS[3]) or '0'))
		redis.call('SET', KEYS[3], string.format('%d', gate + delay), 'PX', string.format('%d', gate + delay - now))
		if gate > now then
			redis.call('SET', KEYS[4], string.format('%d', gate), 'PX', string.format('%d', gate - now + tonumber(ARGV[8])))
			return {-2, gate - now}
		end
	end
end
tries = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return {perAddress - tries, 0}
`)

// giveBackScript takes one guess off the target's count and, with ARGV[1]
// "forget", clears the address's, or else takes one off it too. A count
// is never taken below zero, nor made again once it lapsed.
var giveBackScript = redis.NewScript(`
if ARGV[1] == 'forget' then
	redis.call('DEL', KEYS[1])
elseif tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then
	redis.call('DECR', KEYS[1])
end
if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then
	redis.call('DECR', KEYS[2])
end
return 0
`)

func (c *Turns) keys(target, address string) []string {
	base := c.prefix + ":" + target
	return []string{base + ":address:" + address, base, base + ":next", base + ":turn:" + address}
}

// Take counts a guess of address at target if it may be checked now.
func (c *Turns) Take(ctx context.Context, target, address string) (Verdict, error) {
	l := c.limits
	r, err := turnScript.Run(ctx, c.rdb, c.keys(target, address), l.PerAddress, l.AddressWindow.Milliseconds(), l.Free,
		l.TargetWindow.Milliseconds(), l.Delay.Milliseconds(), l.MaxDelay.Milliseconds(), max(1, l.Step), turnGrace.Milliseconds()).Int64Slice()
	if err != nil {
		return Verdict{}, fmt.Errorf("count a guess: %w", err)
	}
	switch r[0] {
	case -1:
		return Verdict{Locked: true, Wait: time.Duration(max(r[1], 0)) * time.Millisecond}, nil
	case -2:
		return Verdict{Wait: time.Duration(r[1]) * time.Millisecond}, nil
	}
	return Verdict{Allowed: true, Left: int(r[0])}, nil
}

// Unchecked gives back a guess Take let through that could not be
// checked.
func (c *Turns) Unchecked(ctx context.Context, target, address string) error {
	return giveBackScript.Run(ctx, c.rdb, c.keys(target, address), "").Err()
}

// Forgive says the guess was right: the address starts afresh at the
// target, and the target's count gets the guess back.
func (c *Turns) Forgive(ctx context.Context, target, address string) error {
	return giveBackScript.Run(ctx, c.rdb, c.keys(target, address), "forget").Err()
}
