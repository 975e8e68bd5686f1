package uploader

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"lightbox/wait"
)

// tracker follows the project's event stream and tells how far the
// server's work on this run's uploads has come. The stream is the fast
// path; a batch the stream has said nothing of for a while is asked for
// directly, so a lost event or a dropped stream costs a poll, not a hang.
type tracker struct {
	r *run

	mu        sync.Mutex
	batches   map[string]*batchState // every batch heard of, ours or not
	ours      []string
	ourJobs   map[string]int    // batch → assets this run finalized into it
	assets    map[string]string // asset → the status last heard
	ourAssets map[string]bool
	lastID    string
	changed   chan struct{}
}

type batchState struct {
	total, completed, failed int
	done                     bool
	heard                    time.Time
}

// maxEventLine bounds a line of the event stream, and a message's data.
const maxEventLine = 1 << 20

// errEventTooLong ends a stream that sent more than maxEventLine at once.
var errEventTooLong = errors.New("the server's event stream sent a line longer than 1 MiB; it was dropped, and the batches are polled instead")

// staleAfter is how long a batch may go unheard of before it is polled.
const staleAfter = 10 * time.Second

func newTracker(r *run) *tracker {
	return &tracker{r: r, batches: map[string]*batchState{}, ourJobs: map[string]int{},
		assets: map[string]string{}, ourAssets: map[string]bool{}, changed: make(chan struct{}, 1)}
}

func (t *tracker) notify() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// expect adds a batch of this run and the assets finalized into it.
func (t *tracker) expect(batch string, assets []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.ourJobs[batch]; !ok {
		t.ours = append(t.ours, batch)
	}
	t.ourJobs[batch] += len(assets)
	for _, a := range assets {
		t.ourAssets[a] = true
	}
	t.notify()
}

// batchJSON is a batch as events, snapshots and GET /v1/batches show it.
type batchJSON struct {
	ID          string     `json:"id"`
	Status      string     `json:"status"`
	Total       int        `json:"total"`
	Completed   int        `json:"completed"`
	Failed      int        `json:"failed"`
	CompletedAt *time.Time `json:"completedAt"`
}

// batchEnded lists the statuses a batch ends in.
var batchEnded = map[string]bool{"completed": true, "partial": true, "failed": true, "cancelled": true, "canceled": true}

func (t *tracker) heard(b batchJSON, ended bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.batches[b.ID] = &batchState{total: b.Total, completed: b.Completed, failed: b.Failed,
		done: ended || b.CompletedAt != nil || batchEnded[b.Status], heard: time.Now()}
	t.notify()
}

// follow keeps the project's event stream open until ctx ends,
// reconnecting with the last event id after a break.
func (t *tracker) follow(ctx context.Context) {
	for failures := 0; ; {
		start := time.Now()
		err := t.stream(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			failures = 0
		}
		failures++
		pause := backoff(failures)
		if ae, ok := err.(*APIError); ok && ae.RetryAfter > pause {
			pause = ae.RetryAfter
		}
		if errors.Is(err, errEventTooLong) {
			t.r.report(Event{Kind: EventRetry, Message: err.Error(), WaitSeconds: pause.Seconds()})
		}
		if wait.For(ctx, pause) != nil {
			return
		}
	}
}

// stream reads the project's events until the stream ends.
func (t *tracker) stream(ctx context.Context) error {
	q := url.Values{"projectId": {t.r.project}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.r.api.base+"/v1/realtime?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+t.r.api.key)
	req.Header.Set("Accept", "text/event-stream")
	t.mu.Lock()
	if t.lastID != "" {
		req.Header.Set("Last-Event-ID", t.lastID)
	}
	t.mu.Unlock()
	res, err := t.r.api.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if err := answerError(res); err != nil {
		return err
	}
	// Server-Sent Events: "field: value" lines, a blank line ends a
	// message, lines starting with ':' are comments (heartbeats). A line,
	// or a message, longer than maxEventLine ends the stream: a server
	// that never ends a line would otherwise fill the memory.
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	var id, name string
	var data strings.Builder
	for {
		if !sc.Scan() {
			if errors.Is(sc.Err(), bufio.ErrTooLong) {
				return errEventTooLong
			}
			return cmp.Or(sc.Err(), io.EOF)
		}
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			if name != "" || data.Len() > 0 {
				t.handle(id, name, data.String())
			}
			id, name = "", ""
			data.Reset()
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			id = value
		case "event":
			name = value
		case "data":
			if data.Len()+len(value) >= maxEventLine {
				return errEventTooLong
			}
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(value)
		}
	}
}

func (t *tracker) handle(id, name, data string) {
	if id != "" {
		t.mu.Lock()
		t.lastID = id
		t.mu.Unlock()
	}
	switch name {
	case "batch.updated", "batch.completed":
		var b batchJSON
		if json.Unmarshal([]byte(data), &b) == nil && b.ID != "" {
			t.heard(b, name == "batch.completed")
		}
	case "state_sync":
		var snap struct {
			Batches []batchJSON `json:"batches"`
		}
		if json.Unmarshal([]byte(data), &snap) == nil {
			for _, b := range snap.Batches {
				t.heard(b, false)
			}
		}
	case "asset.updated":
		var a struct {
			AssetID string `json:"assetId"`
			Status  string `json:"status"`
		}
		if json.Unmarshal([]byte(data), &a) == nil && a.AssetID != "" {
			t.mu.Lock()
			t.assets[a.AssetID] = a.Status
			t.mu.Unlock()
			t.notify()
		}
	}
}

// progress counts the work on this run's uploads, and lists the batches
// still running and those among them not heard of lately.
func (t *tracker) progress() (c Counts, running, stale []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range t.ours {
		b := t.batches[id]
		if b == nil {
			c.Jobs += t.ourJobs[id]
			running = append(running, id)
			stale = append(stale, id)
			continue
		}
		c.Jobs += max(b.total, t.ourJobs[id])
		c.Processed += b.completed
		c.JobsFailed += b.failed
		if !b.done {
			running = append(running, id)
			if time.Since(b.heard) > staleAfter {
				stale = append(stale, id)
			}
		}
	}
	for a := range t.ourAssets {
		if s := t.assets[a]; s == "search" || s == "ai" {
			c.Searchable++
		}
	}
	return c, running, stale
}

// poll asks for a batch the stream has said nothing of lately.
func (t *tracker) poll(ctx context.Context, id string) error {
	var ans struct {
		Batch batchJSON `json:"batch"`
	}
	if err := t.r.api.call(ctx, http.MethodGet, "/v1/batches/"+id, nil, &ans); err != nil {
		return err
	}
	t.heard(ans.Batch, false)
	return nil
}

// wait reports processing counts until every batch of this run has ended.
func (t *tracker) wait(ctx context.Context) error {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	var shown Counts
	var shownAt time.Time
	for {
		c, running, stale := t.progress()
		r := t.r
		r.mu.Lock()
		r.res.Counts.Jobs, r.res.Counts.Processed, r.res.Counts.JobsFailed, r.res.Counts.Searchable = c.Jobs, c.Processed, c.JobsFailed, c.Searchable
		r.mu.Unlock()
		if now := r.counts(); *now != shown && (time.Since(shownAt) >= time.Second || len(running) == 0) {
			r.report(Event{Kind: EventProcessing, Counts: now})
			shown, shownAt = *now, time.Now()
		}
		if len(running) == 0 {
			return nil
		}
		select {
		case <-t.changed:
		case <-tick.C:
			for _, id := range stale[:min(len(stale), 10)] {
				// call has ridden out what passes; what is left (a refused
				// key, a server gone for minutes) ends the run.
				if err := t.poll(ctx, id); err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					return fmt.Errorf("following batch %s: %w", id, err)
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// failedBatches lists this run's batches with failed jobs.
func (t *tracker) failedBatches() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, id := range t.ours {
		if b := t.batches[id]; b != nil && b.failed > 0 {
			out = append(out, id)
		}
	}
	return out
}
