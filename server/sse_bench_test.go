package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/testsupport/procstat"
	"lightbox/testsupport/testenv"
)

// sseRate is how many events a second BenchmarkSSEOverHTTP publishes: a
// busy batch's progress, steady.
const sseRate = 20

// BenchmarkSSEOverHTTP opens 5,000 real HTTP event streams on one server
// process (the built cmd/server, so its memory and CPU are its own),
// publishes b.N events to their project at a steady rate from this
// process, as a worker would, and reports publish-to-client latency, the
// server's resident memory per connection and the CPU it spent, beside a
// raw Redis PUBLISH to one subscriber at the same rate in the same run.
// LIGHTBOX_BENCH_STREAMS sets the number of connections;
// LIGHTBOX_BENCH_SERVER_PERF names a file to record the server's CPU
// profile in with perf while events flow (go test's -cpuprofile covers the
// clients).
func BenchmarkSSEOverHTTP(b *testing.B) {
	n := 5000
	if v, err := strconv.Atoi(os.Getenv("LIGHTBOX_BENCH_STREAMS")); err == nil && v > 0 {
		n = v
	}
	raiseFileLimit(b, 2*n+1000)
	env := testenv.New(b)
	ctx := context.Background()
	rawP50, rawP99 := testenv.RawPubSubLatency(b, env.Redis, 300, sseRate)

	owner, project := env.Project(b)
	key, _, err := env.Store.CreateAPIKey(ctx, owner, "bench")
	if err != nil {
		b.Fatal(err)
	}
	srv := startServerProcess(b, env, map[string]string{
		"SSE_STREAMS_PER_USER": strconv.Itoa(n), "RATE_API_PER_MINUTE": "1000000", "RATE_API_BURST": "1000000",
	})
	rssBefore := procstat.Memory(srv.pid, "VmRSS")

	// Event ids of a fresh project are 1, 2, ...: sentAt[id] is when the
	// publisher started publishing it. A stream subscribes before it
	// answers 200, so once every stream has answered, none misses one.
	sentAt := make([]atomic.Int64, b.N+1)
	latencies := make([][]time.Duration, n)
	var opened, wg sync.WaitGroup
	opened.Add(n)
	var failed atomic.Int64
	slots := make(chan struct{}, 64) // connections being opened at once
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			conn, r, err := openStream(srv.addr, key, project)
			<-slots
			opened.Done()
			if err != nil {
				failed.Add(1)
				return
			}
			defer conn.Close()
			for len(latencies[i]) < b.N {
				line, err := r.ReadSlice('\n')
				if err != nil {
					failed.Add(1)
					return
				}
				if idText, ok := strings.CutPrefix(string(line), "id: "); ok {
					id, _ := strconv.Atoi(strings.TrimSpace(idText))
					latencies[i] = append(latencies[i], time.Duration(time.Now().UnixNano()-sentAt[id].Load()))
				}
			}
		})
	}
	opened.Wait()
	pub := events.NewPublisher(env.Redis, events.PublisherOptions{})
	rssAfter := procstat.Memory(srv.pid, "VmRSS")
	cpuBefore := procstat.CPU(srv.pid)

	stopPerf := procstat.Perf(b, srv.pid, os.Getenv("LIGHTBOX_BENCH_SERVER_PERF"))
	tick := time.NewTicker(time.Second / sseRate)
	defer tick.Stop()
	b.ResetTimer()
	start := time.Now()
	for id := 1; id <= b.N; id++ {
		<-tick.C
		ev, err := events.New(events.JobProgress, project, uuid.Nil, map[string]any{"jobId": uuid.New(), "status": "running", "progress": 0.5})
		if err != nil {
			b.Fatal(err)
		}
		sentAt[id].Store(time.Now().UnixNano())
		if _, err := pub.Publish(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	b.StopTimer()
	elapsed := time.Since(start)
	cpu := procstat.CPU(srv.pid) - cpuBefore
	stopPerf()

	var all []time.Duration
	for _, l := range latencies {
		all = append(all, l...)
	}
	p50, p99 := testenv.Percentiles(all)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(0, "ns/op") // the loop is paced; its time per op says nothing
	b.ReportMetric(float64(n), "streams")
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(rawP50), "raw-p50-ms")
	b.ReportMetric(ms(rawP99), "raw-p99-ms")
	b.ReportMetric(float64(rssAfter-rssBefore)/float64(n)/1024, "server-KiB/stream")
	b.ReportMetric(cpu.Seconds()/elapsed.Seconds()*100, "server-cpu-%")
	// The CPU per event delivered depends less than the percentage on how
	// busy the machine is, which stretches the run.
	b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "server-µs/delivery")
	b.ReportMetric(float64(failed.Load()), "streams-failed")
	if failed.Load() > 0 || len(all) < n*b.N {
		b.Errorf("%d streams failed; %d of %d events arrived", failed.Load(), len(all), n*b.N)
	}
}

// openStream opens one event stream the way EventSource does, on a plain
// connection, and returns it once the server answered 200.
func openStream(addr, key string, project uuid.UUID) (net.Conn, *bufio.Reader, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Minute)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(conn, "GET /v1/realtime?projectId=%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n",
		project, addr, key)
	r := bufio.NewReaderSize(conn, 4096)
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if res.StatusCode != http.StatusOK {
		conn.Close()
		return nil, nil, fmt.Errorf("stream: %s", res.Status)
	}
	return conn, bufio.NewReaderSize(res.Body, 4096), nil
}

// raiseFileLimit lets this process hold n open files, as far as the hard
// limit allows; the server process inherits it.
func raiseFileLimit(b *testing.B, n int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	if lim.Cur < uint64(n) {
		lim.Cur = min(uint64(n), lim.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			b.Fatal(err)
		}
	}
	if lim.Cur < uint64(n) {
		b.Skipf("the open-file limit is %d; %d streams need %d", lim.Cur, n/2, n)
	}
}
