package events_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"lightbox/events"
	"lightbox/testsupport/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: hubs,
// subscriptions and streams must all clean up after themselves.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait for something to happen. It only catches a hang:
// under load, with the rest of the suite beside it, an event can take
// seconds.
const wait = 2 * time.Minute

// setup gives the test its own Redis database, a publisher and a hub.
func setup(t *testing.T) (*redis.Client, *events.Publisher, *events.Hub) {
	t.Helper()
	env := testenv.New(t)
	hub := events.NewHub(env.Redis, nil)
	t.Cleanup(func() { hub.Close() })
	return env.Redis, events.NewPublisher(env.Redis, events.PublisherOptions{}), hub
}

func subscribe(t *testing.T, hub *events.Hub, project uuid.UUID, opts events.SubscribeOptions) *events.Subscription {
	t.Helper()
	sub, err := hub.Subscribe(context.Background(), project, opts)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// publish publishes a job.progress event whose data is {"n": n}.
func publish(t testing.TB, pub *events.Publisher, project, batch uuid.UUID, n int) events.Event {
	t.Helper()
	ev, err := events.New(events.JobProgress, project, batch, map[string]int{"n": n})
	if err != nil {
		t.Fatal(err)
	}
	ev, err = pub.Publish(context.Background(), ev)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return ev
}

func next(t *testing.T, sub *events.Subscription) *events.Event {
	t.Helper()
	select {
	case ev, ok := <-sub.Events():
		if !ok {
			t.Fatalf("subscription ended: %v", sub.Err())
		}
		return ev
	case <-time.After(wait):
		t.Fatalf("no event within %v", wait)
		return nil
	}
}

// ended waits for sub's channel to close and returns how many events were
// still buffered in it.
func ended(t *testing.T, sub *events.Subscription) int {
	t.Helper()
	n := 0
	timeout := time.After(wait)
	for {
		select {
		case _, ok := <-sub.Events():
			if !ok {
				return n
			}
			n++
		case <-timeout:
			t.Fatalf("subscription still open after %v", wait)
		}
	}
}

func sameEvent(t *testing.T, got *events.Event, want events.Event) {
	t.Helper()
	if got.ID != want.ID || got.Name != want.Name || got.ProjectID != want.ProjectID ||
		got.BatchID != want.BatchID || string(got.Data) != string(want.Data) || !got.Time.Equal(want.Time) {
		t.Fatalf("got event %+v (data %s), want %+v (data %s)", *got, got.Data, want, want.Data)
	}
}

// numSub is how many of Redis's connections subscribe to the project's
// channel. Redis applies an UNSUBSCRIBE after the call that sent it has
// returned, so the tests wait for the count to fall (testenv.Eventually).
func numSub(t *testing.T, rdb *redis.Client, project uuid.UUID) int64 {
	t.Helper()
	n, err := rdb.PubSubNumSub(context.Background(), events.Channel(project)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n[events.Channel(project)]
}

func TestPublishReachesEverySubscriberOfTheProject(t *testing.T) {
	_, pub, hub := setup(t)
	project, other := uuid.New(), uuid.New()
	a := subscribe(t, hub, project, events.SubscribeOptions{})
	b := subscribe(t, hub, project, events.SubscribeOptions{})
	elsewhere := subscribe(t, hub, other, events.SubscribeOptions{})

	var sent []events.Event
	for i := range 5 {
		sent = append(sent, publish(t, pub, project, uuid.Nil, i))
	}
	for i, want := range sent {
		if want.ID != uint64(i+1) {
			t.Fatalf("event %d published with id %d, want %d", i, want.ID, i+1)
		}
		sameEvent(t, next(t, a), want)
		sameEvent(t, next(t, b), want)
	}

	// The other project's subscriber gets its own project's event first,
	// so none of the five reached it; its ids start at 1 of their own.
	mine := publish(t, pub, other, uuid.Nil, 99)
	sameEvent(t, next(t, elsewhere), mine)
	if mine.ID != 1 {
		t.Fatalf("first event of another project has id %d, want 1", mine.ID)
	}
}

func TestTwoHubsReceiveTheSameEvents(t *testing.T) {
	env := testenv.New(t)
	pub := events.NewPublisher(env.Redis, events.PublisherOptions{})
	project := uuid.New()
	// Two server processes: each its own client and hub.
	var subs []*events.Subscription
	for range 2 {
		rdb := redis.NewClient(env.Redis.Options())
		hub := events.NewHub(rdb, nil)
		t.Cleanup(func() {
			hub.Close()
			rdb.Close()
		})
		subs = append(subs, subscribe(t, hub, project, events.SubscribeOptions{}))
	}
	for i := range 20 {
		want := publish(t, pub, project, uuid.Nil, i)
		for _, sub := range subs {
			sameEvent(t, next(t, sub), want)
		}
	}
}

func TestBatchSubscriberGetsOnlyItsBatch(t *testing.T) {
	_, pub, hub := setup(t)
	project, batch := uuid.New(), uuid.New()
	onlyBatch := subscribe(t, hub, project, events.SubscribeOptions{BatchID: batch})
	all := subscribe(t, hub, project, events.SubscribeOptions{})

	publish(t, pub, project, uuid.Nil, 1)
	publish(t, pub, project, uuid.New(), 2)
	mine := publish(t, pub, project, batch, 3)

	sameEvent(t, next(t, onlyBatch), mine)
	for want := uint64(1); want <= 3; want++ {
		if got := next(t, all).ID; got != want {
			t.Fatalf("project subscriber got id %d, want %d", got, want)
		}
	}
}

func TestProjectChannelIsDroppedWithItsLastSubscriber(t *testing.T) {
	rdb, pub, hub := setup(t)
	project := uuid.New()
	a := subscribe(t, hub, project, events.SubscribeOptions{})
	b := subscribe(t, hub, project, events.SubscribeOptions{})
	if n := numSub(t, rdb, project); n != 1 {
		t.Fatalf("two subscribers hold %d Redis subscriptions, want 1", n)
	}

	a.Close()
	a.Close() // twice is fine
	if ended(t, a) != 0 || a.Err() != nil {
		t.Fatalf("closed subscription: err %v", a.Err())
	}
	want := publish(t, pub, project, uuid.Nil, 1)
	sameEvent(t, next(t, b), want)
	if n := numSub(t, rdb, project); n != 1 {
		t.Fatalf("with one subscriber left: %d Redis subscriptions, want 1", n)
	}

	b.Close()
	testenv.Eventually(t, "the project's channel to be unsubscribed", wait, func() bool { return numSub(t, rdb, project) == 0 })
	if n := hub.Subscribers(); n != 0 {
		t.Fatalf("hub counts %d subscribers, want 0", n)
	}

	// Listening again subscribes again.
	c := subscribe(t, hub, project, events.SubscribeOptions{})
	want = publish(t, pub, project, uuid.Nil, 2)
	sameEvent(t, next(t, c), want)
}

func TestSubscriptionEndsWithItsContext(t *testing.T) {
	rdb, _, hub := setup(t)
	project := uuid.New()
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := hub.Subscribe(ctx, project, events.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	ended(t, sub)
	if sub.Err() != nil {
		t.Fatalf("Err after the context ended = %v, want nil", sub.Err())
	}
	testenv.Eventually(t, "the project's channel to be unsubscribed", wait, func() bool { return numSub(t, rdb, project) == 0 })

	if _, err := hub.Subscribe(ctx, project, events.SubscribeOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("subscribe with an ended context: %v, want context.Canceled", err)
	}
}

func TestSlowSubscriberIsCutOffAndOthersGetEverything(t *testing.T) {
	_, pub, hub := setup(t)
	project := uuid.New()
	slow := subscribe(t, hub, project, events.SubscribeOptions{Buffer: 4}) // never read until the end
	fast := subscribe(t, hub, project, events.SubscribeOptions{})

	var got []uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range fast.Events() {
			got = append(got, ev.ID)
			if len(got) == 50 {
				return
			}
		}
	}()
	for i := range 50 {
		publish(t, pub, project, uuid.Nil, i)
	}
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("the fast subscriber did not get all 50 events within %v", wait)
	}
	if len(got) != 50 {
		t.Fatalf("fast subscriber got %d events, then ended with %v", len(got), fast.Err())
	}
	for i, id := range got {
		if id != uint64(i+1) {
			t.Fatalf("fast subscriber's event %d has id %d", i, id)
		}
	}

	if n := ended(t, slow); n != 4 {
		t.Fatalf("slow subscriber had %d events buffered when cut off, want 4", n)
	}
	if !errors.Is(slow.Err(), events.ErrSlowConsumer) {
		t.Fatalf("slow subscriber ended with %v, want events.ErrSlowConsumer", slow.Err())
	}
	if fast.Err() != nil {
		t.Fatalf("fast subscriber ended: %v", fast.Err())
	}
}

func TestSinceReplaysWhatIsKeptAndReportsGaps(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	pub := events.NewPublisher(env.Redis, events.PublisherOptions{Keep: 5})
	project, batch := uuid.New(), uuid.New()

	if evs, complete, err := pub.Since(ctx, project, 0); err != nil || !complete || len(evs) != 0 {
		t.Fatalf("a project without events: %v, complete %v, %v; want none, complete", evs, complete, err)
	}
	var sent []events.Event
	for i := range 8 {
		sent = append(sent, publish(t, pub, project, batch, i))
	}
	if latest, err := pub.Latest(ctx, project); err != nil || latest != 8 {
		t.Fatalf("Latest = %d, %v; want 8", latest, err)
	}

	for _, c := range []struct {
		last     uint64
		complete bool
		want     []events.Event
	}{
		{last: 3, complete: true, want: sent[3:]}, // the five kept: 4 to 8
		{last: 7, complete: true, want: sent[7:]},
		{last: 8, complete: true},
		{last: 2, complete: false},  // 3 is no longer kept
		{last: 0, complete: false},  // a client that has nothing
		{last: 42, complete: false}, // newer than anything: Redis lost its data
	} {
		evs, complete, err := pub.Since(ctx, project, c.last)
		if err != nil {
			t.Fatalf("Since(%d): %v", c.last, err)
		}
		if complete != c.complete || len(evs) != len(c.want) {
			t.Fatalf("Since(%d): %d events, complete %v; want %d, complete %v", c.last, len(evs), complete, len(c.want), c.complete)
		}
		for i := range evs {
			sameEvent(t, &evs[i], c.want[i])
		}
	}
}

func TestConcurrentPublishersGetUniqueIncreasingIds(t *testing.T) {
	_, pub, hub := setup(t)
	project := uuid.New()
	sub := subscribe(t, hub, project, events.SubscribeOptions{Buffer: 1000})

	const writers, each = 8, 50
	ids := make(chan uint64, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				ev, err := events.New(events.JobProgress, project, uuid.Nil, map[string]int{"n": w*each + i})
				if err == nil {
					ev, err = pub.Publish(context.Background(), ev)
				}
				if err != nil {
					t.Error(err)
					return
				}
				ids <- ev.ID
			}
		})
	}
	wg.Wait()
	close(ids)

	var returned []uint64
	for id := range ids {
		returned = append(returned, id)
	}
	slices.Sort(returned)
	for i, id := range returned {
		if id != uint64(i+1) {
			t.Fatalf("Publish returned ids %v..., want 1 to %d each once", returned[:i+1], writers*each)
		}
	}
	// The channel carries them in id order, none missing.
	for want := uint64(1); want <= writers*each; want++ {
		if got := next(t, sub).ID; got != want {
			t.Fatalf("subscriber got id %d, want %d", got, want)
		}
	}
}

func TestHubCloseEndsEverySubscription(t *testing.T) {
	rdb, _, hub := setup(t)
	p1, p2 := uuid.New(), uuid.New()
	subs := []*events.Subscription{
		subscribe(t, hub, p1, events.SubscribeOptions{}),
		subscribe(t, hub, p1, events.SubscribeOptions{}),
		subscribe(t, hub, p2, events.SubscribeOptions{}),
	}
	if err := hub.Close(); err != nil {
		t.Fatal(err)
	}
	for _, sub := range subs {
		ended(t, sub)
		if !errors.Is(sub.Err(), events.ErrHubClosed) {
			t.Fatalf("subscription ended with %v, want events.ErrHubClosed", sub.Err())
		}
	}
	if _, err := hub.Subscribe(context.Background(), p1, events.SubscribeOptions{}); !errors.Is(err, events.ErrHubClosed) {
		t.Fatalf("subscribe on a closed hub: %v, want events.ErrHubClosed", err)
	}
	testenv.Eventually(t, "every channel to be unsubscribed after Close", wait, func() bool {
		return numSub(t, rdb, p1) == 0 && numSub(t, rdb, p2) == 0
	})
}

func TestLostConnectionEndsStreamsAndHubRecovers(t *testing.T) {
	rdb, pub, hub := setup(t)
	ctx := context.Background()
	project := uuid.New()
	sub := subscribe(t, hub, project, events.SubscribeOptions{})

	// Kill the hub's connection: the one subscribed client on this test's
	// database index.
	list, err := rdb.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	db := " db=" + strconv.Itoa(rdb.Options().DB) + " "
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, db) && strings.Contains(line, " sub=1 ") {
			id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
			if err := rdb.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
				t.Fatal(err)
			}
			killed++
		}
	}
	if killed != 1 {
		t.Fatalf("found %d subscribed connections of this hub, want 1", killed)
	}

	ended(t, sub)
	if !errors.Is(sub.Err(), events.ErrUnavailable) {
		t.Fatalf("subscription ended with %v, want events.ErrUnavailable", sub.Err())
	}
	again := subscribe(t, hub, project, events.SubscribeOptions{})
	want := publish(t, pub, project, uuid.Nil, 1)
	sameEvent(t, next(t, again), want)
}

func TestPublishRefusesBadEvents(t *testing.T) {
	env := testenv.New(t)
	pub := events.NewPublisher(env.Redis, events.PublisherOptions{})
	ctx := context.Background()
	for name, ev := range map[string]events.Event{
		"unknown name": {Name: "job.exploded", ProjectID: uuid.New()},
		"state_sync":   {Name: events.StateSync, ProjectID: uuid.New()},
		"no project":   {Name: events.JobDone},
		"bad data":     {Name: events.JobDone, ProjectID: uuid.New(), Data: []byte("{nope")},
	} {
		if _, err := pub.Publish(ctx, ev); !errors.Is(err, events.ErrInvalid) {
			t.Errorf("%s: Publish returned %v, want ErrInvalid", name, err)
		}
	}
	if _, err := events.New(events.JobDone, uuid.New(), uuid.Nil, func() {}); !errors.Is(err, events.ErrInvalid) {
		t.Errorf("New with data that cannot be JSON: %v, want ErrInvalid", err)
	}
	if _, err := events.New(events.StateSync, uuid.New(), uuid.Nil, map[string]any{}); err != nil {
		t.Errorf("New(state_sync): %v", err)
	}
}

func TestSubscribeReturnsOnlyOnceRedisHasTheSubscription(t *testing.T) {
	_, pub, hub := setup(t)
	// Publish the moment Subscribe returns, on fresh projects, many times:
	// had Subscribe returned before Redis took the SUBSCRIBE, some of these
	// events would be lost.
	for i := range 200 {
		project := uuid.New()
		sub := subscribe(t, hub, project, events.SubscribeOptions{})
		want := publish(t, pub, project, uuid.Nil, i)
		sameEvent(t, next(t, sub), want)
		sub.Close()
	}
}

// blackhole is a TCP proxy to Redis that can stop passing bytes without
// closing anything, as a dead network path does.
type blackhole struct {
	ln     net.Listener
	target string
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newBlackhole(t *testing.T, target string) *blackhole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bh := &blackhole{ln: ln, target: target}
	bh.wg.Go(bh.accept)
	t.Cleanup(func() {
		ln.Close()
		bh.mu.Lock()
		for _, c := range bh.conns {
			c.Close()
		}
		bh.mu.Unlock()
		bh.wg.Wait()
	})
	return bh
}

func (bh *blackhole) accept() {
	for {
		client, err := bh.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", bh.target)
		if err != nil {
			client.Close()
			continue
		}
		bh.mu.Lock()
		bh.conns = append(bh.conns, client, server)
		bh.mu.Unlock()
		bh.wg.Go(func() { bh.pipe(server, client) })
		bh.wg.Go(func() { bh.pipe(client, server) })
	}
}

func (bh *blackhole) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		if bh.frozen.Load() {
			continue // swallowed
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

func TestSilentConnectionIsReplaced(t *testing.T) {
	env := testenv.New(t)
	bh := newBlackhole(t, env.Redis.Options().Addr)
	opt := *env.Redis.Options()
	opt.Addr = bh.ln.Addr().String()
	rdb := redis.NewClient(&opt)
	// A health check each second: on a busy machine an answer through the
	// proxy can take longer than a tenth of one.
	hub := events.NewHubEvery(rdb, nil, time.Second)
	t.Cleanup(func() {
		hub.Close()
		rdb.Close()
	})
	pub := events.NewPublisher(env.Redis, events.PublisherOptions{})
	project := uuid.New()
	subscribeOnce := func(what string) *events.Subscription {
		var sub *events.Subscription
		testenv.Eventually(t, what, wait, func() bool {
			s, err := hub.Subscribe(context.Background(), project, events.SubscribeOptions{})
			sub = s
			return err == nil
		})
		return sub
	}
	sub := subscribeOnce("a subscription through the proxy")

	// The connection stays open but nothing comes through any more: without
	// a health check the stream would wait forever.
	bh.frozen.Store(true)
	ended(t, sub)
	if !errors.Is(sub.Err(), events.ErrUnavailable) {
		t.Fatalf("subscription ended with %v, want events.ErrUnavailable", sub.Err())
	}

	bh.frozen.Store(false)
	again := subscribeOnce("a subscription once the network is back")
	defer again.Close()
	want := publish(t, pub, project, uuid.Nil, 1)
	sameEvent(t, next(t, again), want)
}

func TestPublishAllNumbersEachProjectsEventsInOrder(t *testing.T) {
	_, pub, _ := setup(t)
	ctx := context.Background()
	a, b := uuid.New(), uuid.New()
	publish(t, pub, a, uuid.Nil, 0)
	// More than one script call's worth, interleaved across two projects.
	var evs []events.Event
	for i := 1; i <= events.PublishAllMax+2; i++ {
		for _, project := range []uuid.UUID{a, b} {
			ev, err := events.New(events.JobProgress, project, uuid.Nil, map[string]int{"n": i})
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
		}
	}
	if err := pub.PublishAll(ctx, evs); err != nil {
		t.Fatal(err)
	}
	for project, first := range map[uuid.UUID]int{a: 1, b: 0} {
		got, complete, err := pub.Since(ctx, project, uint64(first))
		if err != nil || !complete || len(got) != events.PublishAllMax+2 {
			t.Fatalf("%d events, complete %v, %v", len(got), complete, err)
		}
		for i, ev := range got {
			if ev.ID != uint64(first+i+1) || string(ev.Data) != `{"n":`+strconv.Itoa(i+1)+`}` {
				t.Fatalf("event %d: id %d, data %s", i, ev.ID, ev.Data)
			}
		}
	}
	if err := pub.PublishAll(ctx, nil); err != nil {
		t.Fatal(err)
	}
}
