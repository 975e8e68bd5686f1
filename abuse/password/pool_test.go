package password_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lightbox/abuse/password"
	"lightbox/testsupport/testenv"
)

// waiting waits for n callers in p's line.
func waiting(t *testing.T, p *password.Pool, n int) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprint(n, " callers in line"), 3*time.Minute, func() bool { return p.Waiting() == n })
}

// hold takes a slot of p for key, failing t if it cannot.
func hold(t *testing.T, p *password.Pool, key string) (release func()) {
	t.Helper()
	return <-holdLater(t, p, key)
}

// holdLater takes a slot of p for key, in line if need be, and sends its
// release once it has it; from any goroutine.
func holdLater(t *testing.T, p *password.Pool, key string) <-chan func() {
	held := make(chan func(), 1)
	go func() {
		release, err := p.Hold(t.Context(), key)
		if err != nil {
			t.Errorf("a slot for %s: %v", key, err)
			release = func() {}
		}
		held <- release
	}()
	return held
}

// A caller finding the slot taken waits for it, one of each key and a few
// in all: past those, the caller is refused at once, so callers never pile
// up, and none holds a hash's memory while it waits.
func TestPoolRefusesPastItsLine(t *testing.T) {
	p := password.NewPool(password.Limits{Slots: 1, KeyWaiting: 1, Waiting: 2})
	h, err := p.Hash(t.Context(), "a", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	release := hold(t, p, "a")
	var verified sync.WaitGroup
	for i, key := range []string{"a", "b"} {
		verified.Go(func() {
			if ok, err := p.Verify(t.Context(), key, h, "correct horse"); !ok || err != nil {
				t.Errorf("Verify for %s once its turn came: %v, %v", key, ok, err)
			}
		})
		waiting(t, p, i+1)
	}
	if _, err := p.Hash(t.Context(), "a", "x"); !errors.Is(err, password.ErrBusy) {
		t.Fatalf("Hash for a key with a caller in line: %v, want ErrBusy", err)
	}
	if _, err := p.Verify(t.Context(), "c", h, "x"); !errors.Is(err, password.ErrBusy) {
		t.Fatalf("Verify with the line full: %v, want ErrBusy", err)
	}
	release()
	verified.Wait()
	if p.Ran() != 4 || p.Waited() != 2 || p.Refused() != 2 {
		t.Errorf("ran %d, waited %d, refused %d; want 4, 2 and 2", p.Ran(), p.Waited(), p.Refused())
	}
	if n := password.DefaultSlots(); n < 1 || n > runtime.GOMAXPROCS(0) {
		t.Errorf("DefaultSlots %d on %d cores", n, runtime.GOMAXPROCS(0))
	}
}

// Keys take turns for a slot: a key with three callers in line has one
// served, then the key that came after it, however early its others came.
func TestPoolServesKeysInTurn(t *testing.T) {
	p := password.NewPool(password.Limits{Slots: 1, KeyWaiting: 3, Waiting: 8})
	release := hold(t, p, "x")
	var mu sync.Mutex
	var order []string
	var served sync.WaitGroup
	for i, name := range []string{"x1", "x2", "x3", "y1"} {
		served.Go(func() {
			release := <-holdLater(t, p, name[:1])
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			release()
		})
		waiting(t, p, i+1)
	}
	release()
	served.Wait()
	if got := fmt.Sprint(order); got != "[x1 y1 x2 x3]" {
		t.Errorf("served %s; want [x1 y1 x2 x3]", got)
	}
}

// With PerKey 1, a key's second caller waits for its first even while a
// slot is free, and another key takes that slot at once.
func TestPoolRunsOneHashOfAKeyAtATime(t *testing.T) {
	p := password.NewPool(password.Limits{Slots: 2, PerKey: 1, KeyWaiting: 1, Waiting: 4})
	first := hold(t, p, "ana")
	second := holdLater(t, p, "ana")
	waiting(t, p, 1)
	hold(t, p, "bob")()
	if p.Waiting() != 1 {
		t.Fatalf("%d callers in line; want ana's second", p.Waiting())
	}
	first()
	(<-second)()
}

// However many keys ask at once, no more than Slots hashes run: the
// pool's memory is its slots'. Each caller is served or refused.
func TestPoolRunsAtMostItsSlotsForManyKeys(t *testing.T) {
	const slots, callers = 2, 200
	p := password.NewPool(password.Limits{Slots: slots, PerKey: 1, KeyWaiting: 2, Waiting: 16})
	var running, most atomic.Int64
	var served, refused atomic.Int64
	var all sync.WaitGroup
	for i := range callers {
		all.Go(func() {
			release, err := p.Hold(t.Context(), fmt.Sprint("user ", i%50))
			if errors.Is(err, password.ErrBusy) {
				refused.Add(1)
				return
			} else if err != nil {
				t.Error(err)
				return
			}
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			runtime.Gosched()
			running.Add(-1)
			served.Add(1)
			release()
		})
	}
	all.Wait()
	t.Logf("%d callers of 50 keys: %d served, %d refused, at most %d at once", callers, served.Load(), refused.Load(), most.Load())
	if most.Load() > slots || served.Load()+refused.Load() != callers || served.Load() < slots {
		t.Errorf("%d served, %d refused, at most %d at once; want all answered, at most %d at once", served.Load(), refused.Load(), most.Load(), slots)
	}
	if p.Waiting() != 0 {
		t.Errorf("%d callers left in line", p.Waiting())
	}
}

// A caller who gives up leaves the line, and its place goes to the next.
func TestPoolForgetsACallerWhoGivesUp(t *testing.T) {
	p := password.NewPool(password.Limits{Slots: 1, KeyWaiting: 1, Waiting: 1})
	release := hold(t, p, "a")
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error)
	go func() {
		_, err := p.Hold(ctx, "b")
		gaveUp <- err
	}()
	waiting(t, p, 1)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller whose context ended: %v", err)
	}
	if p.Waiting() != 0 {
		t.Fatalf("%d callers in line after the only one gave up", p.Waiting())
	}
	next := holdLater(t, p, "c")
	waiting(t, p, 1)
	release()
	(<-next)()
	if p.Ran() != 2 {
		t.Errorf("ran %d; want 2, the caller who gave up not among them", p.Ran())
	}
}
