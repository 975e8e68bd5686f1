package uploader

import (
	"context"
	"fmt"
	"testing"
)

func TestWindowGrowsOnSuccessAndHalvesOnFailure(t *testing.T) {
	w := newWindow(4, 16)
	w.calm = 0
	var sizes []int
	w.onResize = func(n int) { sizes = append(sizes, n) }
	for range 4 + 5 {
		w.success()
	}
	if got := w.current(); got != 6 {
		t.Errorf("after 9 successes from 4: %d, want 6 (one more per window's worth)", got)
	}
	w.failure()
	if got := w.current(); got != 3 {
		t.Errorf("after a failure: %d, want 3", got)
	}
	w.failure()
	w.failure()
	if got := w.current(); got != 1 {
		t.Errorf("after three failures: %d, want the floor of 1", got)
	}
	if fmt.Sprint(sizes) != "[5 6 3 1]" {
		t.Errorf("resizes reported: %v, want [5 6 3 1]", sizes)
	}
}

func TestWindowHoldsPUTsBeyondItsSize(t *testing.T) {
	w := newWindow(2, 4)
	ctx := context.Background()
	for range 2 {
		if err := w.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan error)
	go func() { got <- w.acquire(ctx) }()
	select {
	case err := <-got:
		t.Fatalf("a third PUT started in a window of 2 (%v)", err)
	default:
	}
	w.release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.acquire(cancelled); err == nil {
		t.Error("acquire on a full window returned without a slot or an error")
	}
}
