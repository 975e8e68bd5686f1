package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Stream defaults.
const (
	DefaultHeartbeat    = 15 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

// maxBatch bounds how much Stream writes between flushes when events
// arrive faster than the client reads.
const maxBatch = 64 << 10

// WriteHeaders starts an SSE response: status 200 and the event-stream
// headers, flushed so the client sees the stream open at once.
func WriteHeaders(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx would otherwise hold events back
	w.WriteHeader(http.StatusOK)
	return http.NewResponseController(w).Flush()
}

// WriteEvent writes ev as one SSE message: its id, its name as the event
// type, and its data as a single JSON line. Nothing is flushed.
func WriteEvent(w io.Writer, ev Event) error {
	b, err := appendEvent(nil, &ev)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// WriteComment writes an SSE comment, which clients ignore; sent now and
// then, it keeps proxies from closing an idle stream.
func WriteComment(w io.Writer, text string) error {
	if strings.ContainsAny(text, "\r\n") {
		return fmt.Errorf("%w: a comment is one line", ErrInvalid)
	}
	_, err := io.WriteString(w, ": "+text+"\n\n")
	return err
}

func appendEvent(b []byte, ev *Event) ([]byte, error) {
	if ev.Name == "" || strings.ContainsAny(string(ev.Name), "\r\n") {
		return b, fmt.Errorf("%w: event name %q", ErrInvalid, ev.Name)
	}
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, ev.ID, 10)
	b = append(b, "\nevent: "...)
	b = append(b, ev.Name...)
	b = append(b, "\ndata: "...)
	switch {
	case len(ev.Data) == 0:
		b = append(b, "null"...)
	case bytes.ContainsAny(ev.Data, "\r\n"):
		// Events that went through Redis are compact already; one built
		// by hand may not be, and a line break would end the data field.
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, ev.Data); err != nil {
			return nil, fmt.Errorf("%w: %s data: %v", ErrInvalid, ev.Name, err)
		}
		b = buf.Bytes()
	default:
		b = append(b, ev.Data...)
	}
	return append(b, "\n\n"...), nil
}

// StreamOptions tune Stream; zero values take the defaults.
type StreamOptions struct {
	// After skips events with this id or lower: the last id the handler
	// wrote before streaming (from a replay or a state_sync).
	After uint64
	// Heartbeat is how often a comment goes out. Default 15 s.
	Heartbeat time.Duration
	// WriteTimeout is how long one write may take before the client is
	// given up. Default 30 s.
	WriteTimeout time.Duration
}

// Stream writes sub's events to w as they come, with a heartbeat comment
// every opts.Heartbeat, until ctx ends (nil), the subscription ends
// (sub.Err(): ErrSlowConsumer, ErrUnavailable, ErrHubClosed, or nil after
// Close) or a write fails. The caller has written the headers (see
// WriteHeaders) and closes sub.
func Stream(ctx context.Context, w http.ResponseWriter, sub *Subscription, opts StreamOptions) error {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	rc := http.NewResponseController(w)
	// A deadline per write, so a client that stopped reading cannot hold
	// the handler forever; the server's own WriteTimeout no longer applies
	// to a stream. Moving it costs about as much as the write, so it moves
	// only once it is more than slack nearer than WriteTimeout: each write
	// still gets at least WriteTimeout-slack.
	slack := min(opts.WriteTimeout/8, time.Second)
	var deadline time.Time
	send := func(b []byte) error {
		if now := time.Now(); deadline.Sub(now) < opts.WriteTimeout-slack {
			deadline = now.Add(opts.WriteTimeout)
			if err := rc.SetWriteDeadline(deadline); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}

	heartbeat := time.NewTicker(opts.Heartbeat)
	defer heartbeat.Stop()
	after := opts.After
	// next is ev as an SSE message, or nil when it went out already.
	next := func(ev *Event) ([]byte, error) {
		if ev.ID <= after {
			return nil, nil
		}
		after = ev.ID
		if ev.frame != nil {
			return ev.frame, nil
		}
		return appendEvent(nil, ev)
	}
	// buf gathers the events that wait together, to flush once for all of
	// them; a lone event goes out from the frame the hub shares.
	var buf []byte
	events := sub.Events()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-heartbeat.C:
			if err := send([]byte(": heartbeat\n\n")); err != nil {
				return err
			}
		case ev, ok := <-events:
			if !ok {
				return sub.Err()
			}
			out, err := next(ev)
			if err != nil {
				return err
			}
		more:
			for len(out) < maxBatch {
				select {
				case ev, ok = <-events:
					if !ok {
						break more
					}
					f, err := next(ev)
					if err != nil {
						return err
					}
					if len(f) == 0 {
						continue
					}
					if len(buf) == 0 {
						buf = append(buf, out...)
					}
					buf = append(buf, f...)
					out = buf
				default:
					break more
				}
			}
			if len(out) > 0 {
				if err := send(out); err != nil {
					return err
				}
			}
			// A burst's buffer is not kept for the life of the stream.
			if cap(buf) > 4<<10 {
				buf = nil
			}
			buf = buf[:0]
			if !ok {
				return sub.Err()
			}
		}
	}
}
