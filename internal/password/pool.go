package password

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
)

// ErrBusy says every slot of a Pool is taken: the caller is refused at
// once rather than queued, so no number of callers makes a process hold
// more than its slots' memory.
var ErrBusy = errors.New("password: every hash slot is busy")

// HashMemory is what one hash of this package holds while it runs.
const HashMemory = memoryKiB << 10

// Pool runs Hash and Verify on at most a fixed number of slots at once.
// It is safe for concurrent use.
type Pool struct {
	slots   chan struct{}
	ran     atomic.Int64
	refused atomic.Int64
}

// NewPool is a pool of n slots (at least one).
func NewPool(n int) *Pool { return &Pool{slots: make(chan struct{}, max(1, n))} }

// Hash is the package's Hash on a free slot, or ErrBusy.
func (p *Pool) Hash(pw string) (string, error) {
	if !p.take() {
		return "", ErrBusy
	}
	defer p.give()
	return Hash(pw)
}

// Verify is the package's Verify on a free slot, or ErrBusy.
func (p *Pool) Verify(hash, pw string) (bool, error) {
	if !p.take() {
		return false, ErrBusy
	}
	defer p.give()
	return Verify(hash, pw)
}

func (p *Pool) take() bool {
	select {
	case p.slots <- struct{}{}:
		p.ran.Add(1)
		return true
	default:
		p.refused.Add(1)
		return false
	}
}

// give frees a slot once the hash's memory is collected: left to the
// pacer, the garbage of two or three hashes piles up before a collection
// (the heap grows to twice what was live at the last one), and each is
// 64 MiB. A collection of a server's small heap costs far less than the
// hash did.
func (p *Pool) give() {
	runtime.GC()
	<-p.slots
}

// Slots is how many hashes the pool runs at once.
func (p *Pool) Slots() int { return cap(p.slots) }

// Ran counts the hashes the pool started; Refused those it refused.
func (p *Pool) Ran() int64     { return p.ran.Load() }
func (p *Pool) Refused() int64 { return p.refused.Load() }

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
