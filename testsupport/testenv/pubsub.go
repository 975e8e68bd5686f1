package testenv

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// RawPubSubLatency is the baseline of the event benchmarks: count
// PUBLISHes at rate a second to one plain go-redis subscriber, and the
// publish-to-receive latency at the 50th and 99th percentiles.
func RawPubSubLatency(tb testing.TB, rdb *redis.Client, count, rate int) (p50, p99 time.Duration) {
	tb.Helper()
	ctx := context.Background()
	ch := "lightbox:bench:" + uuid.NewString()
	ps := rdb.Subscribe(ctx, ch)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription is in place
		tb.Fatal(err)
	}
	msgs := ps.Channel()
	sentAt := make([]atomic.Int64, count)
	got := make([]time.Duration, 0, count)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			i, _ := strconv.Atoi(m.Payload)
			got = append(got, time.Duration(time.Now().UnixNano()-sentAt[i].Load()))
			if len(got) == count {
				return
			}
		}
	}()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := range count {
		<-tick.C
		sentAt[i].Store(time.Now().UnixNano())
		if err := rdb.Publish(ctx, ch, strconv.Itoa(i)).Err(); err != nil {
			tb.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		tb.Fatalf("raw subscriber got %d of %d messages", len(got), count)
	}
	return Percentiles(got)
}

// Percentiles sorts d and returns its 50th and 99th percentiles.
func Percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return d[len(d)/2], d[len(d)*99/100]
}
