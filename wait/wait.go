// Package wait provides a sleep that ends early when its context does.
package wait

import (
	"context"
	"time"
)

// For sleeps for d, or until ctx ends, whose error it then returns.
func For(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
