package password

import (
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ErrBusy says a Pool's line is full, for the caller's key or for all:
// the caller is refused at once rather than queued without end.
var ErrBusy = errors.New("password: the line for a hash slot is full")

// HashMemory is what one hash of this package holds while it runs.
const HashMemory = memoryKiB << 10

// Limits shape a Pool.
type Limits struct {
	// Slots is how many hashes run at once, each holding HashMemory: the
	// pool's memory, however many callers there are.
	Slots int
	// PerKey is how many hashes of one key run at once; 0 for any number
	// up to Slots.
	PerKey int
	// KeyWaiting is how many callers of one key wait for a slot at once,
	// and Waiting how many wait in all; a caller past either is refused at
	// once. Keys take turns, one caller a turn, so a newcomer waits for at
	// most one caller of each key ahead of it, however many that key has.
	KeyWaiting, Waiting int
}

// Pool runs Hash and Verify on at most Limits.Slots at once; a caller
// finding them all taken waits in line, by key in turn, or is refused
// with ErrBusy when the line is full. It is safe for concurrent use.
type Pool struct {
	limits Limits

	mu      sync.Mutex
	running int
	waiting int
	// keys holds each key with a hash running or a caller waiting, and
	// turns those with callers waiting, the next to be served first.
	keys  map[string]*keyLine
	turns []*keyLine

	ran, waited, refused atomic.Int64
}

type keyLine struct {
	key     string
	running int
	waiters []*waiter // in arrival order
}

// waiter is a caller in line; ready closes once it holds a slot.
type waiter struct {
	ready   chan struct{}
	granted bool
}

// NewPool is a pool shaped by l; it has at least one slot.
func NewPool(l Limits) *Pool {
	l.Slots = max(1, l.Slots)
	return &Pool{limits: l, keys: map[string]*keyLine{}}
}

// Hash is the package's Hash on a slot, for key, or an error: ErrBusy, or
// ctx's once it ends while the caller waits.
func (p *Pool) Hash(ctx context.Context, key, pw string) (string, error) {
	var h string
	err := p.run(ctx, key, func() (err error) { h, err = Hash(pw); return err })
	return h, err
}

// Verify is the package's Verify on a slot, for key, or an error: ErrBusy,
// or ctx's once it ends while the caller waits.
func (p *Pool) Verify(ctx context.Context, key, hash, pw string) (bool, error) {
	var ok bool
	err := p.run(ctx, key, func() (err error) { ok, err = Verify(hash, pw); return err })
	return ok, err
}

func (p *Pool) run(ctx context.Context, key string, f func() error) error {
	l, err := p.take(ctx, key)
	if err != nil {
		return err
	}
	defer p.give(l)
	return f()
}

// take holds a slot for key, at once or after the caller's turn.
func (p *Pool) take(ctx context.Context, key string) (*keyLine, error) {
	p.mu.Lock()
	l := p.keys[key]
	if l == nil {
		l = &keyLine{key: key}
		p.keys[key] = l
	}
	// Whoever waits has a key at its PerKey, or the slots are all taken:
	// a caller who may run now jumps ahead of nobody.
	if p.running < p.limits.Slots && p.mayRun(l) {
		p.start(l)
		p.mu.Unlock()
		return l, nil
	}
	if len(l.waiters) >= p.limits.KeyWaiting || p.waiting >= p.limits.Waiting {
		p.forget(l)
		p.mu.Unlock()
		p.refused.Add(1)
		return nil, ErrBusy
	}
	w := &waiter{ready: make(chan struct{})}
	l.waiters = append(l.waiters, w)
	if len(l.waiters) == 1 {
		p.turns = append(p.turns, l)
	}
	p.waiting++
	p.mu.Unlock()
	p.waited.Add(1)

	select {
	case <-w.ready:
		return l, nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	if w.granted {
		// The slot came as the caller gave up: hand it on.
		p.ran.Add(-1)
		p.release(l)
		p.mu.Unlock()
		return nil, ctx.Err()
	}
	l.waiters = slices.DeleteFunc(l.waiters, func(o *waiter) bool { return o == w })
	if len(l.waiters) == 0 {
		p.turns = slices.DeleteFunc(p.turns, func(o *keyLine) bool { return o == l })
	}
	p.waiting--
	p.forget(l)
	p.mu.Unlock()
	return nil, ctx.Err()
}

// give frees a slot once the hash's memory is collected, and hands it to
// the next caller in turn. Left to the pacer, the garbage of two or three
// hashes piles up before a collection (the heap grows to twice what was
// live at the last one), and each is 64 MiB. A collection of a server's
// small heap costs far less than the hash did.
func (p *Pool) give(l *keyLine) {
	runtime.GC()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.release(l)
}

func (p *Pool) release(l *keyLine) {
	p.running--
	l.running--
	p.serve()
	p.forget(l)
}

// serve hands free slots to waiting callers: to the first key in turn
// that may run, which goes to the back of the turns if it has more.
func (p *Pool) serve() {
	for p.running < p.limits.Slots {
		i := slices.IndexFunc(p.turns, p.mayRun)
		if i < 0 {
			return
		}
		l := p.turns[i]
		p.turns = slices.Delete(p.turns, i, i+1)
		w := l.waiters[0]
		l.waiters = l.waiters[1:]
		if len(l.waiters) > 0 {
			p.turns = append(p.turns, l)
		}
		p.waiting--
		p.start(l)
		w.granted = true
		close(w.ready)
	}
}

func (p *Pool) mayRun(l *keyLine) bool { return p.limits.PerKey <= 0 || l.running < p.limits.PerKey }

func (p *Pool) start(l *keyLine) {
	p.running++
	l.running++
	p.ran.Add(1)
}

// forget drops a key with nothing running or waiting.
func (p *Pool) forget(l *keyLine) {
	if l.running == 0 && len(l.waiters) == 0 {
		delete(p.keys, l.key)
	}
}

// Slots is how many hashes the pool runs at once.
func (p *Pool) Slots() int { return p.limits.Slots }

// Ran counts the hashes the pool started, Waited those of them and of
// the callers who gave up that waited in line first, and Refused the
// callers refused with ErrBusy.
func (p *Pool) Ran() int64     { return p.ran.Load() }
func (p *Pool) Waited() int64  { return p.waited.Load() }
func (p *Pool) Refused() int64 { return p.refused.Load() }

// Waiting is how many callers wait in line now.
func (p *Pool) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}

// DefaultSlots sizes a pool from the machine: a hash runs on one core, so
// one slot per two cores leaves half of them to everything else, and one
// per GiB of memory keeps the hashes under a sixteenth of it. At least
// one.
func DefaultSlots() int {
	n := runtime.GOMAXPROCS(0) / 2
	if mem := machineMemory(); mem > 0 {
		n = min(n, int(mem>>30))
	}
	return max(1, n)
}

// machineMemory is the memory this process may use: its cgroup's limit
// when there is one, otherwise the machine's; 0 when neither can be read.
func machineMemory() int64 {
	total := meminfoTotal()
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// "max" (v2) or a huge number (v1) means no limit.
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			return n
		}
	}
	return total
}

func meminfoTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
