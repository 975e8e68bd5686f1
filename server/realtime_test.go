package server_test

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/testsupport/testenv"
)

func TestEventsReachClientsOfTwoServers(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	one := startApp(t, env, env.Redis)
	two := startApp(t, env, env.Redis)
	key := one.user("ana@example.org", false)
	project := one.newProject(key)
	pid := uuid.MustParse(project)

	a := one.openStream("/v1/realtime?projectId="+project, "Authorization", "Bearer "+key)
	b := two.openStream("/v1/realtime?projectId="+project, "Authorization", "Bearer "+key)
	if a.res.StatusCode != 200 || a.res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream answer %d %s", a.res.StatusCode, a.res.Header.Get("Content-Type"))
	}
	// A worker publishes; both servers' clients see it with the same id.
	sent := publish(t, env, pid, uuid.Nil, events.JobDone, map[string]string{"jobId": "j1"})
	for _, c := range []*sseClient{a, b} {
		ev := c.next()
		if ev.name != "job.done" || ev.id != strconvU(sent.ID) || !strings.Contains(ev.data, `"j1"`) {
			t.Fatalf("event %+v, want job.done id %d", ev, sent.ID)
		}
	}
	// Events of another project never arrive.
	publish(t, env, uuid.New(), uuid.Nil, events.JobDone, map[string]string{"jobId": "other"})
	sent = publish(t, env, pid, uuid.Nil, events.AssetUpdated, map[string]string{"assetId": "a1"})
	if ev := a.next(); ev.name != "asset.updated" || ev.id != strconvU(sent.ID) {
		t.Fatalf("after another project's event: %+v", ev)
	}
}

func strconvU(n uint64) string { return strconv.FormatUint(n, 10) }

func TestReconnectGetsStateSyncThenLiveEvents(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	pid := uuid.MustParse(project)
	r, _ := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))
	expect(t, r, 200, "")

	first := publish(t, a.env, pid, uuid.Nil, events.JobProgress, map[string]string{"n": "1"})
	publish(t, a.env, pid, uuid.Nil, events.JobProgress, map[string]string{"n": "2"})
	latest := publish(t, a.env, pid, uuid.Nil, events.JobProgress, map[string]string{"n": "3"})

	c := a.openStream("/v1/realtime?projectId="+project, "Authorization", "Bearer "+key, "Last-Event-ID", strconvU(first.ID))
	ev := c.next()
	if ev.name != "state_sync" || ev.id != strconvU(latest.ID) {
		t.Fatalf("first event %+v, want state_sync with id %d", ev, latest.ID)
	}
	var snap struct {
		Stats   struct{ Total, Processing int }
		Batches []struct{ Total int }
	}
	json.Unmarshal([]byte(ev.data), &snap)
	if snap.Stats.Total != 2 || snap.Stats.Processing != 2 || len(snap.Batches) != 1 || snap.Batches[0].Total != 2 {
		t.Fatalf("snapshot %s", ev.data)
	}
	live := publish(t, a.env, pid, uuid.Nil, events.BatchUpdated, map[string]string{"n": "4"})
	if ev := c.next(); ev.name != "batch.updated" || ev.id != strconvU(live.ID) {
		t.Fatalf("after the snapshot: %+v", ev)
	}

	// Up to date: no snapshot, straight to live events.
	c2 := a.openStream("/v1/realtime?projectId="+project+"&lastEventId="+strconvU(live.ID), "Authorization", "Bearer "+key)
	next := publish(t, a.env, pid, uuid.Nil, events.JobDone, map[string]string{"n": "5"})
	if ev := c2.next(); ev.name != "job.done" || ev.id != strconvU(next.ID) {
		t.Fatalf("resuming at the newest id: %+v", ev)
	}
}

func TestBatchStreamOnlyCarriesItsBatch(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	r, _ := a.uploadAll(key, project, corpus(t, "photos/wood.jpg"))
	batch := decode[queued](t, r).BatchID
	c := a.openStream("/v1/batches/"+batch+"/events", "Authorization", "Bearer "+key)
	publish(t, a.env, uuid.MustParse(project), uuid.New(), events.BatchUpdated, map[string]string{"batch": "other"})
	mine := publish(t, a.env, uuid.MustParse(project), uuid.MustParse(batch), events.BatchUpdated, map[string]string{"batch": "mine"})
	if ev := c.next(); ev.id != strconvU(mine.ID) || !strings.Contains(ev.data, "mine") {
		t.Fatalf("batch stream got %+v", ev)
	}
}

func TestStreamTokensAndRefusals(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	logs := &testenv.LockedBuffer{}
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{"SSE_HEARTBEAT": "200ms"}, logTo: logs})
	key := a.user("ana@example.org", false)
	project := a.newProject(key)

	r := a.do("POST", "/v1/realtime/tokens", key, nil)
	expect(t, r, 201, "")
	token := r.json(t)["token"].(string)
	c := a.openStream("/v1/realtime?projectId=" + project + "&accessToken=" + token)
	if c.res.StatusCode != 200 {
		t.Fatalf("stream with a token: %d", c.res.StatusCode)
	}
	// An idle stream carries heartbeat comments.
	deadline := time.After(2 * time.Minute)
	for heartbeat := false; !heartbeat; {
		select {
		case line := <-c.lines:
			heartbeat = strings.HasPrefix(line, ": ")
		case <-deadline:
			t.Fatal("no heartbeat comment")
		}
	}
	c.cancel()

	bad := a.openStream("/v1/realtime?projectId=" + project + "&accessToken=lbs_forged")
	b, _ := io.ReadAll(bad.res.Body)
	if bad.res.StatusCode != 401 || !strings.Contains(string(b), "invalid_credentials") {
		t.Fatalf("forged token: %d %s", bad.res.StatusCode, b)
	}
	bob := a.user("bob@example.org", false)
	if s := a.openStream("/v1/realtime?projectId="+project, "Authorization", "Bearer "+bob); s.res.StatusCode != 404 {
		t.Fatalf("another user's project stream: %d", s.res.StatusCode)
	}
	r, _ = a.uploadAll(key, project, corpus(t, "photos/wood.jpg"))
	batch := decode[queued](t, r).BatchID
	if s := a.openStream("/v1/batches/"+batch+"/events", "Authorization", "Bearer "+bob); s.res.StatusCode != 404 {
		t.Fatalf("another user's batch stream: %d", s.res.StatusCode)
	}
	// A stream's access log line is written once the stream has ended.
	streamLogged := func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "status=200") && strings.Contains(line, "accessToken=REDACTED") {
				return true
			}
		}
		return false
	}
	testenv.Eventually(t, "the stream with a token to be logged with its query redacted", 2*time.Minute, streamLogged)
	if strings.Contains(logs.String(), token) {
		t.Fatal("the stream token reached the log")
	}
}

// A user's open streams are capped, and a stream ends once the key it was
// opened with is revoked.
func TestStreamsAreCappedAndEndWithTheirKey(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{"SSE_HEARTBEAT": "200ms"}})
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	path := "/v1/realtime?projectId=" + project

	var open []*sseClient
	for range 16 {
		s := a.openStream(path, "Authorization", "Bearer "+key)
		if s.res.StatusCode != 200 {
			t.Fatalf("stream %d: %d", len(open)+1, s.res.StatusCode)
		}
		open = append(open, s)
	}
	over := a.openStream(path, "Authorization", "Bearer "+key)
	if b, _ := io.ReadAll(over.res.Body); over.res.StatusCode != 429 || !strings.Contains(string(b), "too_many_streams") {
		t.Fatalf("stream over the cap: %d %s", over.res.StatusCode, b)
	}
	bob := a.user("bob@example.org", false)
	if s := a.openStream("/v1/realtime?projectId="+a.newProject(bob), "Authorization", "Bearer "+bob); s.res.StatusCode != 200 {
		t.Fatalf("another user's stream: %d", s.res.StatusCode)
	}
	// A closed stream frees its place (once the server has seen it end).
	open[0].cancel()
	testenv.Eventually(t, "the closed stream's place to be freed", 2*time.Minute, func() bool {
		s := a.openStream(path, "Authorization", "Bearer "+key)
		if s.res.StatusCode != 200 {
			return false
		}
		open[0] = s
		return true
	})

	a.revoke(key)
	deadline := time.After(2 * time.Minute) // only bounds a hang
	for _, s := range open {
		for ended := false; !ended; {
			select {
			case _, ok := <-s.events:
				ended = !ok
			case <-deadline:
				t.Fatal("a stream outlived its revoked key")
			}
		}
	}
}
