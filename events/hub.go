package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Why a subscription ended, from Subscription.Err. Each means the client
// should reconnect and resume from its last event id.
var (
	// ErrSlowConsumer: the subscriber's buffer filled up; it was cut off so
	// that it slows down no one else.
	ErrSlowConsumer = errors.New("events: subscriber fell behind")
	// ErrUnavailable: the hub lost its Redis connection, so events may have
	// been missed.
	ErrUnavailable = errors.New("events: lost the connection to Redis")
	// ErrHubClosed: the server is shutting down.
	ErrHubClosed = errors.New("events: hub closed")
)

// DefaultBuffer is how many events a subscriber may fall behind before it
// is cut off.
const DefaultBuffer = 256

// healthInterval is how long the hub's connection may stay silent before a
// PING checks it; twice that without an answer and it is replaced.
const healthInterval = 15 * time.Second

// Hub fans the events of each project out to the subscribers of one server
// process. It holds one Redis connection for all projects, subscribed to
// the channel of each project that has at least one subscriber.
type Hub struct {
	rdb    redis.UniversalClient
	log    *slog.Logger
	health time.Duration

	// subMu orders the changes to which channels are wanted with the
	// SUBSCRIBE and UNSUBSCRIBE commands that follow them, so Redis applies
	// them in the same order. It is taken before mu.
	subMu sync.Mutex

	mu       sync.Mutex
	ps       *redis.PubSub
	projects map[string]*project // by channel
	nsubs    int
	tokens   uint64
	closed   bool

	lastHeard atomic.Int64 // unix nanoseconds of the last reply on ps
	closing   chan struct{}
	wg        sync.WaitGroup
}

// project is one subscribed channel and its listeners.
type project struct {
	channel string
	subs    map[*Subscription]struct{}
	// token is the payload of the PING sent right after SUBSCRIBE: Redis
	// answers in order, so its PONG proves the subscription is in place.
	token string
	ready chan struct{} // closed on that PONG, or when the project is dropped
	done  bool
}

func (p *project) finish() {
	if !p.done {
		p.done = true
		close(p.ready)
	}
}

// Subscription is one listener's view of a project's events.
type Subscription struct {
	hub   *Hub
	proj  *project
	batch uuid.UUID
	ch    chan *Event

	// Guarded by hub.mu.
	closed bool
	err    error
	stop   func() bool
}

// SubscribeOptions tune one subscription.
type SubscribeOptions struct {
	// BatchID, when set, passes only the events of that batch.
	BatchID uuid.UUID
	// Buffer is how many events may wait for the reader before it is cut
	// off with ErrSlowConsumer. Default DefaultBuffer.
	Buffer int
}

// NewHub starts a hub on rdb. Close it when the server stops.
func NewHub(rdb redis.UniversalClient, logger *slog.Logger) *Hub {
	return newHub(rdb, logger, healthInterval)
}

func newHub(rdb redis.UniversalClient, logger *slog.Logger, health time.Duration) *Hub {
	if logger == nil {
		logger = slog.Default()
	}
	h := &Hub{
		rdb:      rdb,
		log:      logger,
		health:   health,
		ps:       rdb.Subscribe(context.Background()),
		projects: make(map[string]*project),
		closing:  make(chan struct{}),
	}
	h.lastHeard.Store(time.Now().UnixNano())
	h.wg.Add(2)
	go h.read()
	go h.checkHealth()
	return h
}

// Subscribe starts listening to a project's events. It returns once Redis
// has confirmed the subscription, so every event published after it returns
// is received. ctx bounds both that wait and the subscription, which ends
// when ctx does (pass the request's context), on Close, or when the hub cuts
// it off (see Subscription.Err). Errors are ErrHubClosed, ErrUnavailable or
// ctx's.
func (h *Hub) Subscribe(ctx context.Context, projectID uuid.UUID, opts SubscribeOptions) (*Subscription, error) {
	if projectID == uuid.Nil {
		return nil, fmt.Errorf("%w: subscribe needs a project", ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	s := &Subscription{hub: h, batch: opts.BatchID, ch: make(chan *Event, opts.Buffer)}
	ch := channel(projectID)

	h.subMu.Lock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.subMu.Unlock()
		return nil, ErrHubClosed
	}
	p := h.projects[ch]
	fresh := p == nil
	if fresh {
		h.tokens++
		p = &project{channel: ch, subs: make(map[*Subscription]struct{}),
			token: ch + " " + strconv.FormatUint(h.tokens, 10), ready: make(chan struct{})}
		h.projects[ch] = p
	}
	p.subs[s] = struct{}{}
	s.proj = p
	h.nsubs++
	ps := h.ps
	h.mu.Unlock()
	var err error
	if fresh {
		err = ps.Subscribe(ctx, ch)
		if err == nil {
			err = ps.Ping(ctx, p.token)
		}
		if err != nil {
			// The connection is likely gone; the reader will notice and
			// start over. Until then, make sure nobody waits on p.
			h.mu.Lock()
			h.dropLocked(p, ErrUnavailable)
			h.mu.Unlock()
			ps.Unsubscribe(context.Background(), ch)
		}
	}
	h.subMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: subscribe: %v", ErrUnavailable, err)
	}

	select {
	case <-p.ready:
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.closed {
		if s.err == nil {
			return nil, ErrUnavailable
		}
		return nil, s.err
	}
	s.stop = context.AfterFunc(ctx, s.Close)
	return s, nil
}

// Events delivers the project's events in id order. It is closed when the
// subscription ends; Err then says why. The events are shared with other
// subscribers and must not be modified.
func (s *Subscription) Events() <-chan *Event { return s.ch }

// Err is why Events was closed: nil after Close or the end of the
// subscription's context, else ErrSlowConsumer, ErrUnavailable or
// ErrHubClosed.
func (s *Subscription) Err() error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.err
}

// Close ends the subscription. It is safe to call more than once.
func (s *Subscription) Close() {
	h := s.hub
	h.mu.Lock()
	h.detachLocked(s, nil)
	stop := s.stop
	h.mu.Unlock()
	if stop != nil {
		stop()
	}
	h.release(s.proj)
}

// Subscribers is how many subscriptions are open, for metrics.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nsubs
}

// Close ends every subscription with ErrHubClosed, so that streams finish
// and their clients reconnect to another server, then closes the Redis
// connection.
func (h *Hub) Close() error {
	h.subMu.Lock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.subMu.Unlock()
		return nil
	}
	h.closed = true
	for _, p := range h.projects {
		h.dropLocked(p, ErrHubClosed)
	}
	ps := h.ps
	h.mu.Unlock()
	h.subMu.Unlock()

	close(h.closing)
	ps.Close() // may be closed already, by the health check
	h.wg.Wait()
	return nil
}

// detachLocked ends s with why, unless it has already ended.
func (h *Hub) detachLocked(s *Subscription, why error) {
	if s.closed {
		return
	}
	s.closed, s.err = true, why
	delete(s.proj.subs, s)
	h.nsubs--
	close(s.ch)
}

// dropLocked ends all of p's subscriptions with why and forgets p; the
// caller unsubscribes its channel if the connection stays.
func (h *Hub) dropLocked(p *project, why error) {
	for s := range p.subs {
		h.detachLocked(s, why)
	}
	if h.projects[p.channel] == p {
		delete(h.projects, p.channel)
	}
	p.finish()
}

// release unsubscribes p's channel if p has no subscribers left.
func (h *Hub) release(p *project) {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	h.mu.Lock()
	idle := !h.closed && h.projects[p.channel] == p && len(p.subs) == 0
	if idle {
		h.dropLocked(p, nil)
	}
	ps := h.ps
	h.mu.Unlock()
	if idle {
		if err := ps.Unsubscribe(context.Background(), p.channel); err != nil {
			h.log.Debug("events: unsubscribe", "channel", p.channel, "err", err)
		}
	}
}

// read receives everything the hub's connection gets, until Close.
func (h *Hub) read() {
	defer h.wg.Done()
	ctx := context.Background()
	failures := 0
	for {
		h.mu.Lock()
		ps := h.ps
		h.mu.Unlock()
		msg, err := ps.Receive(ctx)
		if err != nil {
			if h.isClosed() {
				return
			}
			failures++
			h.restart(err, failures)
			// Back off while Redis is away, without delaying shutdown.
			delay := min(50*time.Millisecond<<min(failures, 7), 5*time.Second)
			select {
			case <-time.After(delay):
			case <-h.closing:
				return
			}
			continue
		}
		h.lastHeard.Store(time.Now().UnixNano())
		if failures > 0 {
			h.log.Info("events: Redis subscription connection is back")
			failures = 0
		}
		switch m := msg.(type) {
		case *redis.Message:
			h.fanOut(m)
		case *redis.Pong:
			ch, _, _ := strings.Cut(m.Payload, " ")
			h.mu.Lock()
			if p := h.projects[ch]; p != nil && p.token == m.Payload {
				p.finish()
			}
			h.mu.Unlock()
		}
	}
}

// fanOut hands one published event to each of its project's subscribers,
// never waiting on any of them.
func (h *Hub) fanOut(m *redis.Message) {
	ev, err := decode(m.Payload)
	if err != nil {
		h.log.Warn("events: dropped an unreadable message", "channel", m.Channel, "err", err)
		return
	}
	// Encoded here once rather than by each of the streams; one that does
	// not encode is left to fail in Stream, as one built by hand would.
	if frame, err := appendEvent(nil, ev); err == nil {
		ev.frame = frame
	}
	h.mu.Lock()
	p := h.projects[m.Channel]
	if p == nil {
		h.mu.Unlock()
		return
	}
	slow := 0
	for s := range p.subs {
		if !ev.InBatch(s.batch) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			h.detachLocked(s, ErrSlowConsumer)
			slow++
		}
	}
	idle := len(p.subs) == 0
	h.mu.Unlock()
	if slow > 0 {
		h.log.Info("events: cut off slow subscribers", "project", ev.ProjectID, "count", slow, "eventId", ev.ID)
	}
	if idle {
		h.release(p)
	}
}

// restart ends every subscription after the connection failed, since
// events may have been lost, and starts over on a new connection.
func (h *Hub) restart(cause error, failures int) {
	h.subMu.Lock()
	h.mu.Lock()
	cut := h.nsubs
	for _, p := range h.projects {
		h.dropLocked(p, ErrUnavailable)
	}
	old := h.ps
	h.ps = h.rdb.Subscribe(context.Background())
	h.lastHeard.Store(time.Now().UnixNano())
	h.mu.Unlock()
	h.subMu.Unlock()
	old.Close()
	if failures == 1 || cut > 0 {
		h.log.Warn("events: lost the Redis subscription connection; streams will resync", "err", cause, "cutSubscribers", cut)
	}
}

// checkHealth pings a silent connection and closes one that does not
// answer, which makes read start over. A half-open TCP connection would
// otherwise leave every stream waiting for events that never come.
func (h *Hub) checkHealth() {
	defer h.wg.Done()
	t := time.NewTicker(h.health / 3)
	defer t.Stop()
	for {
		select {
		case <-h.closing:
			return
		case <-t.C:
		}
		silent := time.Since(time.Unix(0, h.lastHeard.Load()))
		if silent < h.health {
			continue
		}
		h.mu.Lock()
		ps := h.ps
		h.mu.Unlock()
		if silent > 2*h.health {
			ps.Close()
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.health)
		ps.Ping(ctx, "health")
		cancel()
	}
}

func (h *Hub) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}
