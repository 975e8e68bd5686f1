package guess_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lightbox/abuse/guess"
	"lightbox/testsupport/testenv"
)

var rule = guess.Rule{Free: 3, Base: time.Minute, Max: 10 * time.Minute, Forget: time.Hour}

func TestDelaysGrowAfterTheFreeGuesses(t *testing.T) {
	c := guess.New(testenv.New(t).Redis)
	ctx := context.Background()
	scope := guess.Scope{Key: "g:target", Rule: rule}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	take := func() time.Duration {
		t.Helper()
		wait, err := c.Take(ctx, now, scope)
		if err != nil {
			t.Fatal(err)
		}
		return wait
	}
	for i := range 3 {
		if wait := take(); wait != 0 {
			t.Fatalf("free guess %d waits %v", i+1, wait)
		}
	}
	// Each later guess waits twice as long after the one before, up to Max;
	// a guess told to wait is not counted.
	for n, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute} {
		if got := take(); got != want || rule.Delay(3+n) != want {
			t.Fatalf("after %d failures: wait %v (Delay says %v), want %v", 3+n, got, rule.Delay(3+n), want)
		}
		now = now.Add(want / 2)
		if got := take(); got != want-want/2 {
			t.Fatalf("half way: wait %v, want %v", got, want-want/2)
		}
		now = now.Add(want - want/2)
		if got := take(); got != 0 {
			t.Fatalf("after the wait: %v", got)
		}
	}
	// A quiet scope forgets a failure per Forget: of 9, 4 are left after
	// 5 hours, and with the next one counted the one after waits Delay(5).
	now = now.Add(5 * time.Hour)
	if got := take(); got != 0 {
		t.Fatalf("after 5 quiet hours: wait %v", got)
	}
	if got, want := take(), rule.Delay(5); got != want || want != 4*time.Minute {
		t.Fatalf("the guess after: wait %v, want %v", got, want)
	}
}

// Guesses sent together are counted one by one, in every scope or none:
// the scope that says wait the longest decides, and a refusal counts in no
// scope.
func TestGuessesTogetherAreCountedAtomically(t *testing.T) {
	c := guess.New(testenv.New(t).Redis)
	ctx := context.Background()
	now := time.Now()
	target := guess.Scope{Key: "g:target", Rule: rule}
	addr := guess.Scope{Key: "g:addr", Rule: guess.Rule{Free: 10, Base: time.Hour, Max: time.Hour, Forget: time.Hour}}
	var passed atomic.Int32
	var wg sync.WaitGroup
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait, err := c.Take(ctx, now, target, addr)
			if err != nil {
				t.Error(err)
			}
			if wait == 0 {
				passed.Add(1)
			}
		}()
	}
	wg.Wait()
	if passed.Load() != 3 {
		t.Fatalf("%d of 30 guesses sent together passed, want the 3 free ones", passed.Load())
	}
	// The address scope counted only those 3: 7 more pass it.
	other := guess.Scope{Key: "g:other-target", Rule: rule}
	for i := range 3 {
		if wait, err := c.Take(ctx, now, other, addr); wait != 0 || err != nil {
			t.Fatalf("guess %d at another target: %v %v", i, wait, err)
		}
	}
	if wait, _ := c.Take(ctx, now, other, addr); wait != time.Minute {
		t.Fatalf("wait %v, want the other target's minute", wait)
	}

	// A right guess is taken back.
	if err := c.Forgive(ctx, target, addr); err != nil {
		t.Fatal(err)
	}
	if wait, _ := c.Take(ctx, now, target, addr); wait != 0 {
		t.Fatalf("after a right guess was forgiven: wait %v", wait)
	}
}
