package events_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/testsupport/testenv"
)

// message is one thing a client read off an SSE stream: an event, or a
// comment.
type message struct {
	id, event, data, comment string
}

// readSSE parses an event stream the way a browser's EventSource does,
// until the body ends.
func readSSE(body io.Reader) <-chan message {
	out := make(chan message, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(body)
		var m message
		started := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if started {
					out <- m
				}
				m, started = message{}, false
			case strings.HasPrefix(line, ":"):
				out <- message{comment: strings.TrimSpace(line[1:])}
			default:
				field, value, _ := strings.Cut(line, ":")
				value = strings.TrimPrefix(value, " ")
				switch field {
				case "id":
					m.id = value
				case "event":
					m.event = value
				case "data":
					if m.data != "" {
						m.data += "\n"
					}
					m.data += value
				}
				started = true
			}
		}
	}()
	return out
}

// nextEvent returns the next event off the stream, skipping heartbeats.
func nextEvent(t *testing.T, msgs <-chan message) message {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("the stream ended")
			}
			if m.comment == "" {
				return m
			}
		case <-timeout:
			t.Fatalf("no event on the stream within %v", wait)
		}
	}
}

func wantEvent(t *testing.T, got message, id uint64, name events.Name, data string) {
	t.Helper()
	if got.id != strconv.FormatUint(id, 10) || got.event != string(name) || got.data != data {
		t.Fatalf("got id %q event %q data %q; want id %d event %q data %q", got.id, got.event, got.data, id, name, data)
	}
}

// streamHandler serves a project's events as the API server does: it
// subscribes first, then replays what the client missed or sends a
// state_sync, then streams.
func streamHandler(hub *events.Hub, pub *events.Publisher, project uuid.UUID, heartbeat time.Duration, ended chan<- error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		sub, err := hub.Subscribe(ctx, project, events.SubscribeOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer sub.Close()
		if err := events.WriteHeaders(w); err != nil {
			ended <- err
			return
		}
		last, _ := strconv.ParseUint(r.Header.Get("Last-Event-ID"), 10, 64)
		missed, complete, err := pub.Since(ctx, project, last)
		if err != nil {
			ended <- err
			return
		}
		if complete {
			for _, ev := range missed {
				events.WriteEvent(w, ev)
				last = ev.ID
			}
		} else {
			latest, err := pub.Latest(ctx, project)
			if err != nil {
				ended <- err
				return
			}
			snapshot, _ := events.New(events.StateSync, project, uuid.Nil, map[string]string{"from": "postgres"})
			snapshot.ID = latest
			events.WriteEvent(w, snapshot)
			last = latest
		}
		ended <- events.Stream(ctx, w, sub, events.StreamOptions{After: last, Heartbeat: heartbeat})
	}
}

// liveHandler streams a project's live events, with no replay, and sends
// what Stream returned to ended.
func liveHandler(hub *events.Hub, project uuid.UUID, opts events.StreamOptions, ended chan<- error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sub, err := hub.Subscribe(r.Context(), project, events.SubscribeOptions{})
		if err != nil {
			ended <- err
			return
		}
		defer sub.Close()
		events.WriteHeaders(w)
		ended <- events.Stream(r.Context(), w, sub, opts)
	}
}

func connect(t *testing.T, url, lastEventID string) <-chan message {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream answered %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return readSSE(resp.Body)
}

func TestStreamResumesLiveOverHTTP(t *testing.T) {
	env := testenv.New(t)
	hub := events.NewHub(env.Redis, nil)
	t.Cleanup(func() { hub.Close() })
	pub := events.NewPublisher(env.Redis, events.PublisherOptions{Keep: 3})
	project := uuid.New()
	ended := make(chan error, 2)
	srv := httptest.NewServer(streamHandler(hub, pub, project, 50*time.Millisecond, ended))
	t.Cleanup(srv.Close)

	for i := 1; i <= 5; i++ {
		publish(t, pub, project, uuid.Nil, i)
	}
	// Within what is kept: the missed events are replayed.
	resumed := connect(t, srv.URL, "3")
	wantEvent(t, nextEvent(t, resumed), 4, events.JobProgress, `{"n":4}`)
	wantEvent(t, nextEvent(t, resumed), 5, events.JobProgress, `{"n":5}`)
	// Beyond it: a snapshot, carrying the id the stream goes on from.
	synced := connect(t, srv.URL, "1")
	wantEvent(t, nextEvent(t, synced), 5, events.StateSync, `{"from":"postgres"}`)

	publish(t, pub, project, uuid.Nil, 6)
	wantEvent(t, nextEvent(t, resumed), 6, events.JobProgress, `{"n":6}`)
	wantEvent(t, nextEvent(t, synced), 6, events.JobProgress, `{"n":6}`)

	// Idle, the stream carries heartbeats.
	select {
	case m, ok := <-resumed:
		if !ok || m.comment != "heartbeat" {
			t.Fatalf("idle stream gave %+v (open %v), want a heartbeat comment", m, ok)
		}
	case <-time.After(wait):
		t.Fatalf("no heartbeat within %v at a 50 ms interval", wait)
	}

	// Server shutdown: the hub closes, the streams end, clients see EOF.
	hub.Close()
	for _, msgs := range []<-chan message{resumed, synced} {
		for range msgs { // heartbeats until the end
		}
		if err := <-ended; !errors.Is(err, events.ErrHubClosed) {
			t.Fatalf("Stream returned %v, want events.ErrHubClosed", err)
		}
	}
}

func TestStreamSkipsEventsAlreadyWritten(t *testing.T) {
	_, pub, hub := setup(t)
	project := uuid.New()
	ended := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sub, err := hub.Subscribe(r.Context(), project, events.SubscribeOptions{})
		if err != nil {
			ended <- err
			return
		}
		defer sub.Close()
		events.WriteHeaders(w)
		// Events published between Subscribe and the replay come both ways.
		var replay []events.Event
		for i := 1; i <= 3; i++ {
			ev, err := events.New(events.JobProgress, project, uuid.Nil, map[string]int{"n": i})
			if err == nil {
				ev, err = pub.Publish(r.Context(), ev)
			}
			if err != nil {
				ended <- err
				return
			}
			replay = append(replay, ev)
		}
		for _, ev := range replay[:2] {
			events.WriteEvent(w, ev)
		}
		ended <- events.Stream(r.Context(), w, sub, events.StreamOptions{After: 2})
	}))
	t.Cleanup(srv.Close)

	msgs := connect(t, srv.URL, "")
	for i := uint64(1); i <= 3; i++ {
		wantEvent(t, nextEvent(t, msgs), i, events.JobProgress, `{"n":`+strconv.FormatUint(i, 10)+`}`)
	}
	publish(t, pub, project, uuid.Nil, 4)
	wantEvent(t, nextEvent(t, msgs), 4, events.JobProgress, `{"n":4}`)
}

func TestStreamEndsWhenTheClientLeaves(t *testing.T) {
	rdb, _, hub := setup(t)
	project := uuid.New()
	ended := make(chan error, 1)
	srv := httptest.NewServer(liveHandler(hub, project, events.StreamOptions{}, ended))
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("Stream returned %v after the client left, want nil", err)
		}
	case <-time.After(wait):
		t.Fatalf("Stream still running %v after the client left", wait)
	}
	testenv.Eventually(t, "the project's channel to be unsubscribed", wait, func() bool { return numSub(t, rdb, project) == 0 })
}

func TestWriteEventFraming(t *testing.T) {
	project := uuid.New()
	var b bytes.Buffer
	ev := events.Event{ID: 7, Name: events.AssetUpdated, ProjectID: project, Data: json.RawMessage("{\n  \"a\": [1,\n 2]\n}")}
	if err := events.WriteEvent(&b, ev); err != nil {
		t.Fatal(err)
	}
	if want := "id: 7\nevent: asset.updated\ndata: {\"a\":[1,2]}\n\n"; b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}

	b.Reset()
	if err := events.WriteEvent(&b, events.Event{ID: 1, Name: events.JobDone}); err != nil || b.String() != "id: 1\nevent: job.done\ndata: null\n\n" {
		t.Fatalf("event without data: %q, %v", b.String(), err)
	}

	for name, bad := range map[string]events.Event{
		"name with a line break": {ID: 1, Name: "job.done\ndata: x"},
		"no name":                {ID: 1},
		"broken JSON":            {ID: 1, Name: events.JobDone, Data: json.RawMessage("{\n")},
	} {
		b.Reset()
		if err := events.WriteEvent(&b, bad); !errors.Is(err, events.ErrInvalid) || b.Len() != 0 {
			t.Errorf("%s: wrote %q, err %v; want nothing and ErrInvalid", name, b.String(), err)
		}
	}

	b.Reset()
	if err := events.WriteComment(&b, "heartbeat"); err != nil || b.String() != ": heartbeat\n\n" {
		t.Fatalf("comment: %q, %v", b.String(), err)
	}
	if err := events.WriteComment(&b, "two\nlines"); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("comment with a line break: %v, want ErrInvalid", err)
	}
}

// A client that stops reading must not hold its stream for ever: once the
// connection's buffers are full, the write deadline ends the stream.
func TestStreamGivesUpOnAClientThatStopsReading(t *testing.T) {
	rdb, _, hub := setup(t)
	pub := events.NewPublisher(rdb, events.PublisherOptions{Keep: 10})
	project := uuid.New()
	ended := make(chan error, 1)
	srv := httptest.NewServer(liveHandler(hub, project, events.StreamOptions{WriteTimeout: 500 * time.Millisecond}, ended))
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", srv.Listener.Addr())
	testenv.Eventually(t, "the stream to subscribe", wait, func() bool { return numSub(t, rdb, project) == 1 })

	// Enough to fill both ends' socket buffers (a few MiB) and the
	// subscription's; the client reads none of it.
	pad := strings.Repeat("x", 16<<10)
	for range 1500 {
		ev, err := events.New(events.JobProgress, project, uuid.Nil, map[string]string{"pad": pad})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		if len(ended) > 0 {
			break
		}
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("Stream returned nil for a client that stopped reading, want the write's error")
		}
	case <-time.After(wait):
		t.Fatalf("Stream still writing %v after the client stopped reading", wait)
	}
}
