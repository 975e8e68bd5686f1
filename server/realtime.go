package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"lightbox/app"
	"lightbox/events"
	"lightbox/store"
)

// streamTokenTTL bounds how long a stream token opens streams. Browsers'
// EventSource cannot send headers, so the token rides in the query string,
// which is why it is short-lived and redacted from logs.
const streamTokenTTL = 5 * time.Minute

func streamTokenKey(token string) string {
	h := sha256.Sum256([]byte(token))
	return "lightbox:stream-token:" + hex.EncodeToString(h[:])
}

// createStreamToken hands out a short-lived token for accessToken=.
func (s *Server) createStreamToken(c *gin.Context) {
	token := store.NewSecret("lbs_")
	if err := s.rdb.Set(c.Request.Context(), streamTokenKey(token), principal(c).KeyID.String(), streamTokenTTL).Err(); err != nil {
		fail(c, apiError(http.StatusServiceUnavailable, "stream_unavailable", "Live progress is unavailable right now; poll instead."))
		return
	}
	c.JSON(http.StatusCreated, gin.H{"token": token, "expiresAt": time.Now().Add(streamTokenTTL).UTC().Truncate(time.Second)})
}

// authenticateStream accepts a stream token in accessToken= as well as the
// usual key or cookie.
func (s *Server) authenticateStream(c *gin.Context) {
	token := c.Query("accessToken")
	if token == "" {
		s.authenticate(c)
		return
	}
	keyID, err := s.rdb.Get(c.Request.Context(), streamTokenKey(token)).Result()
	if errors.Is(err, redis.Nil) {
		fail(c, s.failedCredential(c, apiError(http.StatusUnauthorized, "invalid_credentials", "The stream token is unknown or expired; ask for a new one.")))
		return
	}
	if err != nil {
		fail(c, apiError(http.StatusServiceUnavailable, "stream_unavailable", "Live progress is unavailable right now; poll instead."))
		return
	}
	id, _ := uuid.Parse(keyID)
	p, err := s.store.PrincipalByKeyID(c.Request.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		fail(c, apiError(http.StatusUnauthorized, "invalid_credentials", "The key behind this stream token was revoked."))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.Set(ctxPrincipal, p)
	c.Next()
}

// lastEventID reads the resume point from Last-Event-ID (EventSource sends
// it on reconnect) or ?lastEventId=.
func lastEventID(c *gin.Context) (uint64, bool, error) {
	v := c.GetHeader("Last-Event-ID")
	if v == "" {
		v = c.Query("lastEventId")
	}
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, false, app.FieldErrors{"lastEventId": "must be an event id"}.Err()
	}
	return n, true, nil
}

func (s *Server) realtime(c *gin.Context) {
	id, err := uuid.Parse(c.Query("projectId"))
	if err != nil {
		fail(c, app.FieldErrors{"projectId": "must be a project id"}.Err())
		return
	}
	p, err := s.store.Project(c.Request.Context(), principal(c).ID, id)
	if err != nil {
		fail(c, err)
		return
	}
	s.stream(c, p.ID, uuid.Nil)
}

func (s *Server) batchEvents(c *gin.Context) {
	b, err := s.ownBatch(c)
	if err != nil {
		fail(c, err)
		return
	}
	s.stream(c, b.ProjectID, b.ID)
}

// stream serves one SSE connection: subscribe first, so nothing published
// from then on is missed; a client resuming from an id older than the
// newest gets a state_sync snapshot from Postgres with the newest id; then
// live events, with a heartbeat comment every SSE_HEARTBEAT.
func (s *Server) stream(c *gin.Context, project, batch uuid.UUID) {
	last, resuming, err := lastEventID(c)
	if err != nil {
		fail(c, err)
		return
	}
	user := principal(c)
	if !s.streams.acquire(user.ID) {
		fail(c, apiError(http.StatusTooManyRequests, "too_many_streams", "At most %d event streams may be open at once; close one first.", s.streams.max))
		return
	}
	defer s.streams.release(user.ID)
	ctx, stop := s.untilKeyRevoked(c.Request.Context(), user.KeyID)
	defer stop()
	sub, err := s.hub.Subscribe(ctx, project, events.SubscribeOptions{BatchID: batch})
	if err != nil {
		fail(c, apiError(http.StatusServiceUnavailable, "stream_unavailable", "Live progress is unavailable right now; poll instead."))
		return
	}
	defer sub.Close()
	latest, err := s.events.Latest(ctx, project)
	if err != nil {
		fail(c, apiError(http.StatusServiceUnavailable, "stream_unavailable", "Live progress is unavailable right now; poll instead."))
		return
	}
	after := latest
	var first *events.Event
	if resuming && last != latest {
		snap, err := s.snapshot(c, project, batch)
		if err != nil {
			fail(c, err)
			return
		}
		ev, err := events.New(events.StateSync, project, batch, snap)
		if err != nil {
			fail(c, err)
			return
		}
		ev.ID = latest
		first = &ev
	}
	if err := events.WriteHeaders(c.Writer); err != nil {
		return
	}
	if first != nil {
		if err := events.WriteEvent(c.Writer, *first); err != nil {
			return
		}
	}
	c.Writer.Flush()
	err = events.Stream(ctx, c.Writer, sub, events.StreamOptions{After: after, Heartbeat: s.cfg.SSEHeartbeat})
	if err != nil && !errors.Is(err, events.ErrHubClosed) {
		logger(c).Info("stream ended", "project", project, "reason", err)
	}
}

type snapshotJSON struct {
	Stats   store.ProjectStats `json:"stats"`
	Batches []app.BatchJSON    `json:"batches"`
	Jobs    []jobJSON          `json:"jobs,omitempty"`
}

// snapshot is the state a resuming client needs: stage counts and the
// recent batches, or for a batch stream that batch and its jobs.
func (s *Server) snapshot(c *gin.Context, project, batch uuid.UUID) (*snapshotJSON, error) {
	st, err := s.store.Stats(c.Request.Context(), project)
	if err != nil {
		return nil, err
	}
	snap := &snapshotJSON{Stats: st, Batches: []app.BatchJSON{}}
	if batch == uuid.Nil {
		bs, err := s.store.RecentBatches(c.Request.Context(), project, 20)
		if err != nil {
			return nil, err
		}
		for i := range bs {
			snap.Batches = append(snap.Batches, app.BatchJSONOf(&bs[i]))
		}
		return snap, nil
	}
	b, err := s.store.Batch(c.Request.Context(), principal(c).ID, batch)
	if err != nil {
		return nil, err
	}
	snap.Batches = append(snap.Batches, app.BatchJSONOf(b))
	jobs, err := s.store.BatchJobs(c.Request.Context(), batch)
	if err != nil {
		return nil, err
	}
	snap.Jobs = toJobsJSON(jobs)
	return snap, nil
}
