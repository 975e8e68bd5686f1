// Package queuestate reads and repairs what Asynq keeps in Redis beyond
// the reach of its API: the registry of queues that the Inspector (and so
// Asynqmon and the queue metrics) lists, the tasks live servers say they
// are running, and the tasks a server that died was holding.
//
// The keys and their meaning are Asynq's own (internal/base and
// internal/rdb of github.com/hibiken/asynq v0.26); the tests of this
// package run them against a real Asynq server, so an upgrade that changes
// them fails there.
package queuestate

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Asynq's keys.
const (
	queuesKey  = "asynq:queues"  // SET of every queue's name
	workersKey = "asynq:workers" // ZSET: each server's workers hash, scored by when its heartbeat lapses
	serversKey = "asynq:servers" // ZSET: each server's info, likewise
)

func queuePrefix(q string) string { return "asynq:{" + q + "}:" }

// LeaseDuration is Asynq's lease on an active task: a live server extends
// it to this far ahead at every heartbeat (every 5 s).
const LeaseDuration = 30 * time.Second

// Register names queues in Asynq's registry and returns how many it lacked.
// Asynq's client names a queue there on its first enqueue to it and never
// again in the process's life, so once Redis has lost its data (a FLUSHALL,
// a restart without persistence) nothing lists the queues until every
// process restarts; and a registry that lacks a queue this process serves
// is the sign that Redis lost its data.
func Register(ctx context.Context, rdb redis.UniversalClient, queues []string) (int64, error) {
	if len(queues) == 0 {
		return 0, nil
	}
	members := make([]any, len(queues))
	for i, q := range queues {
		members[i] = q
	}
	return rdb.SAdd(ctx, queuesKey, members...).Result()
}

// Running returns the ids of the tasks that live servers say they are
// running: each server rewrites its workers hash at every heartbeat with a
// short expiry, so a server that died stops being listed within two
// heartbeats (10 s).
func Running(ctx context.Context, rdb redis.UniversalClient, now time.Time) (map[string]bool, error) {
	keys, err := rdb.ZRangeByScore(ctx, workersKey, &redis.ZRangeBy{Min: "(" + itoa(now.Unix()), Max: "+inf"}).Result()
	if err != nil {
		return nil, err
	}
	running := map[string]bool{}
	for _, k := range keys {
		ids, err := rdb.HKeys(ctx, k).Result()
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			running[id] = true
		}
	}
	return running, nil
}

// DeadServers takes the servers whose heartbeat has lapsed out of Asynq's
// list of servers, which keeps them until they are told to go, and
// returns them. A server that stops cleanly takes itself out, so these
// died. Of processes racing, one takes each.
func DeadServers(ctx context.Context, rdb redis.UniversalClient, now time.Time) ([]string, error) {
	lapsed, err := rdb.ZRangeByScore(ctx, serversKey, &redis.ZRangeBy{Min: "-inf", Max: "(" + itoa(now.Unix())}).Result()
	if err != nil {
		return nil, err
	}
	var dead []string
	for _, key := range lapsed {
		n, err := rdb.ZRem(ctx, serversKey, key).Result()
		if err != nil {
			return dead, err
		}
		if n == 1 {
			id := strings.TrimPrefix(key, serversKey+":")
			rdb.ZRem(ctx, workersKey, workersKey+":"+id)
			dead = append(dead, strings.Trim(id, "{}"))
		}
	}
	return dead, nil
}

// Quiet is how long a lease must have gone without being extended before
// its task counts as abandoned: three heartbeats of the server holding it,
// so a live server slowed down by a busy machine is not taken for dead.
const Quiet = 15 * time.Second

// MaxHandBacks is how many times one task is handed back after its server
// died. A task that kills the worker running it (the memory of a huge
// photo, say) would otherwise loop for ever: after this many, it waits for
// Asynq's own lease recovery, which counts a retry each time and archives
// the task when they run out.
const MaxHandBacks = 2

// handBack moves one abandoned task from active back to the head of its
// queue, as Asynq does with a task its server gives up at shutdown, if it
// still is active and its lease still has not been extended since the
// cutoff: a task a live server extended, finished or gave back meanwhile
// is left alone, so two processes handing back at once do it once.
//
// KEYS[1] active, KEYS[2] lease, KEYS[3] pending, KEYS[4] the task's hash,
// KEYS[5] the count of its hand-backs.
// ARGV[1] task id, ARGV[2] lease cutoff (unix), ARGV[3] MaxHandBacks,
// ARGV[4] the count's expiry (s).
// It returns 1 when handed back, 0 when left alone, -1 when handed back
// too often.
var handBack = redis.NewScript(`
local lease = redis.call("ZSCORE", KEYS[2], ARGV[1])
if not lease or tonumber(lease) > tonumber(ARGV[2]) then
  return 0
end
if tonumber(redis.call("GET", KEYS[5]) or "0") >= tonumber(ARGV[3]) then
  return -1
end
if redis.call("LREM", KEYS[1], 0, ARGV[1]) == 0 then
  return 0
end
redis.call("INCR", KEYS[5])
redis.call("EXPIRE", KEYS[5], ARGV[4])
redis.call("ZREM", KEYS[2], ARGV[1])
redis.call("RPUSH", KEYS[3], ARGV[1])
redis.call("HSET", KEYS[4], "state", "pending")
return 1`)

// Abandoned is what HandBack found.
type Abandoned struct {
	Queue, TaskID string
	// Given is false for a task handed back MaxHandBacks times already,
	// left to Asynq's own recovery.
	Given bool
}

// HandBack gives the tasks of servers that died back to their queues as
// soon as their heartbeat is gone, not after Asynq's recovery (which looks
// once a minute for leases expired for 30 s: 60 to 120 s after the death).
// A task counts as abandoned when its lease has not been extended for
// Quiet and no live server lists it as running. The task keeps its retry
// count: the worker dying is not the task failing. The handler must be
// safe to run twice, as every handler already is (a server cut off from
// Redis for longer than Quiet is taken for dead).
func HandBack(ctx context.Context, rdb redis.UniversalClient, queues []string, now time.Time) ([]Abandoned, error) {
	cutoff := now.Add(LeaseDuration - Quiet).Unix()
	var running map[string]bool
	var out []Abandoned
	for _, q := range queues {
		p := queuePrefix(q)
		ids, err := rdb.ZRangeByScore(ctx, p+"lease", &redis.ZRangeBy{Min: "-inf", Max: itoa(cutoff)}).Result()
		if err != nil || len(ids) == 0 {
			if err != nil {
				return out, err
			}
			continue
		}
		if running == nil {
			if running, err = Running(ctx, rdb, now); err != nil {
				return out, err
			}
		}
		for _, id := range ids {
			if running[id] {
				continue
			}
			keys := []string{p + "active", p + "lease", p + "pending", p + "t:" + id, "lightbox:" + strings.TrimSuffix(p, ":") + ":handback:" + id}
			n, err := handBack.Run(ctx, rdb, keys, id, cutoff, MaxHandBacks, int(24*time.Hour/time.Second)).Int()
			if err != nil {
				return out, err
			}
			if n != 0 {
				out = append(out, Abandoned{Queue: q, TaskID: id, Given: n == 1})
			}
		}
	}
	return out, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Waiting reports whether any of queues holds a task ready to run now
// (pending, not scheduled or waiting for a retry), leaving out paused
// queues, whose tasks wait for an operator: what work that should run
// only when nothing else waits asks before it starts.
func Waiting(ctx context.Context, rdb redis.UniversalClient, queues []string) (bool, error) {
	if len(queues) == 0 {
		return false, nil
	}
	pipe := rdb.Pipeline()
	pending := make([]*redis.IntCmd, len(queues))
	paused := make([]*redis.IntCmd, len(queues))
	for i, q := range queues {
		pending[i] = pipe.LLen(ctx, queuePrefix(q)+"pending")
		paused[i] = pipe.Exists(ctx, queuePrefix(q)+"paused")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return false, err
	}
	for i := range queues {
		if pending[i].Val() > 0 && paused[i].Val() == 0 {
			return true, nil
		}
	}
	return false, nil
}
