package events_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/testsupport/testenv"
)

// benchRate is how many events a second the benchmarks publish: a busy
// batch, steady, rather than a flood that measures only queueing.
const benchRate = 100

// The raw Redis baseline is measured once per run, on enough messages for a
// steady p99, and shared by every subscriber count.
var raw struct {
	once     sync.Once
	p50, p99 time.Duration
}

const rawSamples = 300

// BenchmarkFanOut publishes b.N events at a steady rate to N subscribers of
// one project on one hub, each framing every event as SSE as Stream does,
// and reports publish-to-subscriber latency beside the same figures for a
// raw Redis PUBLISH to one plain go-redis subscriber at the same rate,
// measured in the same run, and the heap each subscription costs.
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run("subscribers="+strconv.Itoa(n), func(b *testing.B) { benchFanOut(b, n) })
	}
}

func benchFanOut(b *testing.B, n int) {
	env := testenv.New(b)
	ctx := context.Background()
	raw.once.Do(func() { raw.p50, raw.p99 = testenv.RawPubSubLatency(b, env.Redis, rawSamples, benchRate) })
	rawP50, rawP99 := raw.p50, raw.p99

	hub := events.NewHub(env.Redis, nil)
	defer hub.Close()
	pub := events.NewPublisher(env.Redis, events.PublisherOptions{})
	project := uuid.New()

	// Heap per subscription: what the hub holds for each listener.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	subs := make([]*events.Subscription, n)
	for i := range subs {
		sub, err := hub.Subscribe(ctx, project, events.SubscribeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		subs[i] = sub
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perSub := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)

	// events.Event ids of a fresh project are 1, 2, ...: sentAt[id] is when the
	// publisher started publishing it.
	sentAt := make([]atomic.Int64, b.N+1)
	latencies := make([][]time.Duration, n)
	var wg sync.WaitGroup
	for i, sub := range subs {
		latencies[i] = make([]time.Duration, 0, b.N)
		wg.Go(func() {
			var frame []byte
			for ev := range sub.Events() {
				frame, _ = events.AppendEvent(frame[:0], ev)
				latencies[i] = append(latencies[i], time.Duration(time.Now().UnixNano()-sentAt[ev.ID].Load()))
				if len(latencies[i]) == b.N {
					return
				}
			}
		})
	}

	tick := time.NewTicker(time.Second / benchRate)
	defer tick.Stop()
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		<-tick.C
		ev, err := events.New(events.JobProgress, project, uuid.Nil, map[string]any{"jobId": uuid.New(), "status": "running", "progress": 0.5})
		if err != nil {
			b.Fatal(err)
		}
		sentAt[i].Store(time.Now().UnixNano())
		if _, err := pub.Publish(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait() // every subscriber has all its events, or was cut off
	b.StopTimer()

	var all []time.Duration
	cut := 0
	for i, sub := range subs {
		all = append(all, latencies[i]...)
		if len(latencies[i]) < b.N {
			cut++
		}
		sub.Close()
	}
	p50, p99 := testenv.Percentiles(all)
	b.ReportMetric(0, "ns/op") // the loop is paced; its time per op says nothing
	b.ReportMetric(us(p50), "p50-µs")
	b.ReportMetric(us(p99), "p99-µs")
	b.ReportMetric(us(rawP50), "raw-p50-µs")
	b.ReportMetric(us(rawP99), "raw-p99-µs")
	b.ReportMetric(float64(p50)/float64(rawP50), "p50-x-raw")
	b.ReportMetric(float64(p99)/float64(rawP99), "p99-x-raw")
	b.ReportMetric(perSub, "heap-B/sub")
	b.ReportMetric(float64(cut), "cut-off")
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
