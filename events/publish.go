package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Redis names, all of one project: the id counter and the replay log share a
// hash tag so the publish script runs on one Redis Cluster slot too.
func seqKey(project uuid.UUID) string  { return "lightbox:events:{" + project.String() + "}:seq" }
func logKey(project uuid.UUID) string  { return "lightbox:events:{" + project.String() + "}:log" }
func channel(project uuid.UUID) string { return "lightbox:events:" + project.String() }

// publishScript takes the next ids, logs the events under them and
// publishes them, all in one step, so ids on the channel grow in publish
// order and every id up to the counter is in the log (until trimmed).
// ARGV[1] is the channel, ARGV[2] and ARGV[3] the log's length and age,
// and each further ARGV an event's JSON without its id, which the script
// puts first. It returns the last id.
var publishScript = redis.NewScript(`
local n = #ARGV - 3
local first = redis.call('INCRBY', KEYS[1], n) - n
for i = 1, n do
	local id = string.format('%d', first + i)
	local payload = '{"id":' .. id .. ',' .. string.sub(ARGV[3 + i], 2)
	redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], id .. '-0', 'e', payload)
	redis.call('PUBLISH', ARGV[1], payload)
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return first + n
`)

// PublisherOptions tune the replay log; zero values take the defaults.
type PublisherOptions struct {
	// Keep is how many of a project's newest events can be replayed.
	// Default 1000.
	Keep int
	// MaxAge is how long the log outlives a project's last publish.
	// Default 24 hours.
	MaxAge time.Duration
}

// Publisher publishes events and answers what a reconnecting client missed.
// It is safe for concurrent use; the server and the worker each need one.
type Publisher struct {
	rdb    redis.UniversalClient
	keep   int
	maxAge time.Duration
}

// NewPublisher returns a Publisher on rdb.
func NewPublisher(rdb redis.UniversalClient, opts PublisherOptions) *Publisher {
	if opts.Keep <= 0 {
		opts.Keep = 1000
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = 24 * time.Hour
	}
	return &Publisher{rdb: rdb, keep: opts.Keep, maxAge: opts.MaxAge}
}

// Publish assigns ev the project's next id, keeps it for replay and sends it
// to every hub listening to the project. It returns ev as published.
func (p *Publisher) Publish(ctx context.Context, ev Event) (Event, error) {
	body, err := prepare(&ev)
	if err != nil {
		return Event{}, err
	}
	id, err := p.publish(ctx, ev.ProjectID, []any{body})
	if err != nil {
		return Event{}, fmt.Errorf("publish %s: %w", ev.Name, err)
	}
	ev.ID = id
	return ev, nil
}

// PublishAll publishes evs, in order, each as Publish would, for a writer
// with many events at once: one script call per project (and per
// publishAllMax events, so one call cannot hold Redis long). It returns
// the first error.
func (p *Publisher) PublishAll(ctx context.Context, evs []Event) error {
	var order []uuid.UUID
	bodies := map[uuid.UUID][]any{}
	for _, ev := range evs {
		body, err := prepare(&ev)
		if err != nil {
			return err
		}
		if _, ok := bodies[ev.ProjectID]; !ok {
			order = append(order, ev.ProjectID)
		}
		bodies[ev.ProjectID] = append(bodies[ev.ProjectID], body)
	}
	for _, project := range order {
		for chunk := range slices.Chunk(bodies[project], publishAllMax) {
			if _, err := p.publish(ctx, project, chunk); err != nil {
				return fmt.Errorf("publish %d events: %w", len(chunk), err)
			}
		}
	}
	return nil
}

// publishAllMax is the most events one script call publishes.
const publishAllMax = 256

// publish runs publishScript for bodies, events of project, and returns
// the last id it took.
func (p *Publisher) publish(ctx context.Context, project uuid.UUID, bodies []any) (uint64, error) {
	args := append([]any{channel(project), p.keep, p.maxAge.Milliseconds()}, bodies...)
	return publishScript.Run(ctx, p.rdb, []string{seqKey(project), logKey(project)}, args...).Uint64()
}

// prepare validates ev, stamps its time and encodes it without its id,
// which the publish script writes.
func prepare(ev *Event) ([]byte, error) {
	if err := ev.validate(); err != nil {
		return nil, err
	}
	ev.ID = 0
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return body, nil
}

// Latest is the newest id published for the project, 0 before the first.
func (p *Publisher) Latest(ctx context.Context, project uuid.UUID) (uint64, error) {
	n, err := p.rdb.Get(ctx, seqKey(project)).Uint64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// Since returns the project's events after lastID, oldest first, and
// complete. complete is false, with no events, when some of them are no
// longer kept, or when lastID is newer than anything published (Redis lost
// its data): the client then needs a state_sync instead of a replay.
func (p *Publisher) Since(ctx context.Context, project uuid.UUID, lastID uint64) (evs []Event, complete bool, err error) {
	var latest *redis.StringCmd
	var entries *redis.XMessageSliceCmd
	// One transaction, so the log and the counter are read at the same point.
	_, err = p.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		latest = pipe.Get(ctx, seqKey(project))
		entries = pipe.XRange(ctx, logKey(project), strconv.FormatUint(lastID+1, 10)+"-0", "+")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, false, fmt.Errorf("events since %d: %w", lastID, err)
	}
	newest, err := latest.Uint64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, false, fmt.Errorf("events since %d: %w", lastID, err)
	}
	if lastID >= newest {
		return nil, lastID == newest, nil
	}
	msgs := entries.Val()
	evs = make([]Event, 0, len(msgs))
	for _, m := range msgs {
		ev, err := decode(m.Values["e"])
		if err != nil {
			return nil, false, fmt.Errorf("events since %d: entry %s: %w", lastID, m.ID, err)
		}
		evs = append(evs, *ev)
	}
	// Every id up to newest went into the log, so the replay is whole
	// exactly when it starts right after lastID.
	if len(evs) == 0 || evs[0].ID != lastID+1 {
		return nil, false, nil
	}
	return evs, true, nil
}

// decode reads an event as the publish script wrote it.
func decode(v any) (*Event, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("event is a %T, not JSON text", v)
	}
	ev := new(Event)
	if err := json.Unmarshal([]byte(s), ev); err != nil {
		return nil, err
	}
	if ev.ID == 0 {
		return nil, errors.New("event has no id")
	}
	return ev, nil
}
