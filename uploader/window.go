package uploader

import (
	"context"
	"sync"
	"time"
)

// window is the number of PUTs allowed in flight, adjusted like TCP's
// congestion window: it halves on a refusal or a server error and grows by
// one after a window's worth of successes, at most once per calm period.
type window struct {
	mu             sync.Mutex
	size, min, max int
	active, streak int
	lastCut        time.Time
	calm           time.Duration
	wake           chan struct{} // closed when a slot may have opened
	onResize       func(size int)
}

func newWindow(start, max int) *window {
	return &window{size: start, min: 1, max: max, calm: 5 * time.Second, wake: make(chan struct{})}
}

// acquire waits for a slot.
func (w *window) acquire(ctx context.Context) error {
	for {
		w.mu.Lock()
		if w.active < w.size {
			w.active++
			w.mu.Unlock()
			return nil
		}
		wake := w.wake
		w.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives a slot back.
func (w *window) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.active--
	w.broadcast()
}

func (w *window) broadcast() {
	close(w.wake)
	w.wake = make(chan struct{})
}

// success counts a PUT that went through.
func (w *window) success() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.streak++
	if w.streak >= w.size && w.size < w.max && time.Since(w.lastCut) > w.calm {
		w.size++
		w.streak = 0
		w.broadcast()
		w.resized()
	}
}

// failure counts a refusal or a server error.
func (w *window) failure() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.streak = 0
	// Several PUTs in flight fail together; one cut per calm period
	// answers all of them.
	if time.Since(w.lastCut) < w.calm {
		return
	}
	w.lastCut = time.Now()
	if n := max(w.min, w.size/2); n != w.size {
		w.size = n
		w.resized()
	}
}

func (w *window) resized() {
	if w.onResize != nil {
		w.onResize(w.size)
	}
}

// current is the window's size.
func (w *window) current() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
}
