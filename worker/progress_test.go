package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/events"
)

func TestJobStatesArePublished(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1s"})
	project := h.project()
	hub := events.NewHub(h.env.Redis, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer hub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sub, err := hub.Subscribe(ctx, project, events.SubscribeOptions{Buffer: 1024})
	if err != nil {
		t.Fatal(err)
	}
	asset := h.finalize(project, "wood.jpg", readCorpus(t, "photos/wood.jpg"))
	bad := h.finalize(project, "empty.jpg", nil)
	h.run()

	seen := map[string]int{}
	var lastID uint64
	statuses := map[uuid.UUID]string{}
	// Each job's done event follows its handler's asset.updated, so wait for
	// every event the test expects rather than the first sign of the end.
	for seen["batch.completed"] < 2 || statuses[asset] != "search" || statuses[bad] != "failed" || seen["job.done"] < 3 {
		select {
		case ev := <-sub.Events():
			if ev.ID <= lastID {
				t.Fatalf("event id %d after %d", ev.ID, lastID)
			}
			lastID = ev.ID
			seen[string(ev.Name)]++
			if ev.Name == events.AssetUpdated {
				var a struct {
					AssetID uuid.UUID
					Status  string
				}
				json.Unmarshal(ev.Data, &a)
				statuses[a.AssetID] = a.Status
			}
			if ev.Name == events.JobDone {
				// The SDK spreads data over {type: <event name>}: a
				// field named type would hide the name.
				var fields map[string]any
				json.Unmarshal(ev.Data, &fields)
				if _, ok := fields["type"]; ok || fields["jobType"] == nil {
					t.Fatalf("job.done data %s: want jobType and no type", ev.Data)
				}
			}
		case <-ctx.Done():
			t.Fatalf("events so far %v, asset states %v", seen, statuses)
		}
	}
	if seen["job.progress"] < 3 {
		t.Fatalf("events %v, asset states %v", seen, statuses)
	}
}
