package guess_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"lightbox/abuse/guess"
	"lightbox/testsupport/testenv"
)

func TestAnAddressIsRefusedPastItsGuesses(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	c := guess.NewTurns(env.Redis, "test", guess.TurnLimits{PerAddress: 3, AddressWindow: time.Minute,
		Free: 1000, TargetWindow: time.Hour, Delay: time.Second, Step: 10, MaxDelay: time.Minute})
	for want := 2; want >= 0; want-- {
		if v, err := c.Take(ctx, "g1", "203.0.113.7"); err != nil || !v.Allowed || v.Left != want {
			t.Fatalf("guess with %d left: %+v, %v", want, v, err)
		}
	}
	v, err := c.Take(ctx, "g1", "203.0.113.7")
	if err != nil || v.Allowed || !v.Locked || v.Wait <= 50*time.Second || v.Wait > time.Minute {
		t.Fatalf("a fourth guess: %+v, %v; want locked for about a minute", v, err)
	}
	// Another address, and another target, are not locked.
	if v, _ := c.Take(ctx, "g1", "198.51.100.9"); !v.Allowed {
		t.Fatalf("another address: %+v", v)
	}
	if v, _ := c.Take(ctx, "g2", "203.0.113.7"); !v.Allowed {
		t.Fatalf("another target: %+v", v)
	}
	// A guess that was not checked is given back; a right one clears the count.
	if err := c.Unchecked(ctx, "g2", "203.0.113.7"); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Take(ctx, "g2", "203.0.113.7"); v.Left != 2 {
		t.Fatalf("after a guess given back: %+v, want 2 left", v)
	}
	if err := c.Forgive(ctx, "g1", "203.0.113.7"); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Take(ctx, "g1", "203.0.113.7"); !v.Allowed || v.Left != 2 {
		t.Fatalf("after a right guess: %+v", v)
	}
	// Giving back never makes a count below zero, or one without an end.
	for range 3 {
		c.Unchecked(ctx, "g3", "192.0.2.1")
	}
	if n := len(env.Redis.Keys(ctx, "test:g3*").Val()); n != 0 {
		t.Errorf("giving back guesses never taken left %d keys", n)
	}
}

// Thirty guesses at once from one address: exactly the address's ten go
// through, whatever the order they arrive in.
func TestGuessesAtOnceAreCountedBeforeTheyAreChecked(t *testing.T) {
	env := testenv.New(t)
	c := guess.NewTurns(env.Redis, "test", guess.TurnLimits{PerAddress: 10, AddressWindow: time.Minute,
		Free: 1000, TargetWindow: time.Hour, Delay: time.Second, Step: 10, MaxDelay: time.Minute})
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := map[bool]int{}
	for range 30 {
		wg.Go(func() {
			v, err := c.Take(context.Background(), "g", "203.0.113.7")
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			n[v.Allowed]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if n[true] != 10 || n[false] != 20 {
		t.Fatalf("%d guesses went through and %d were refused; want 10 and 20", n[true], n[false])
	}
}

// Past its free guesses a target hands out turns, further apart as the
// guesses go on; each address holds one turn, and gets it when it comes.
func TestATargetGuessedAtTooMuchHandsOutTurns(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	const delay = 300 * time.Millisecond
	c := guess.NewTurns(env.Redis, "test", guess.TurnLimits{PerAddress: 100, AddressWindow: time.Minute,
		Free: 2, TargetWindow: time.Hour, Delay: delay, Step: 2, MaxDelay: 4 * delay})
	take := func(addr string) guess.Verdict {
		t.Helper()
		v, err := c.Take(ctx, "g", addr)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// The free guesses, then the first turn at once (nobody is before it).
	for _, addr := range []string{"a", "b", "c"} {
		if v := take(addr); !v.Allowed {
			t.Fatalf("guess from %s: %+v", addr, v)
		}
	}
	// d waits a delay; asking again does not move its turn back.
	d := take("d")
	if d.Allowed || d.Locked || d.Wait <= 0 || d.Wait > delay {
		t.Fatalf("d: %+v, want a turn within %v", d, delay)
	}
	if again := take("d"); again.Allowed || again.Wait > d.Wait {
		t.Fatalf("d again: %+v, after %+v", again, d)
	}
	// e comes after d.
	e := take("e")
	if e.Allowed || e.Wait <= d.Wait {
		t.Fatalf("e: %+v, want a turn after d's %v", e, d.Wait)
	}
	time.Sleep(d.Wait)
	if v := take("d"); !v.Allowed {
		t.Fatalf("d at its turn: %+v", v)
	}
	time.Sleep(e.Wait - d.Wait)
	if v := take("e"); !v.Allowed {
		t.Fatalf("e at its turn: %+v", v)
	}
	// Five seen, three past the free ones: turns are two delays apart now.
	f, g := take("f"), take("g")
	if gap := g.Wait - f.Wait; gap < 2*delay-50*time.Millisecond || gap > 2*delay {
		t.Fatalf("turns %v and %v: %v apart, want %v", f.Wait, g.Wait, gap, 2*delay)
	}
}
