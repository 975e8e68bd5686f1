package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/bsm/redislock"
	"github.com/google/uuid"
)

// lockTTL bounds how long a server that died holding a lock keeps it; a
// live holder renews its lock every third of it.
const lockTTL = 30 * time.Second

// lockUpload lets one PUT at a time write an asset's bytes, across every
// server process: a replayed URL cannot stream many copies of a large file
// into temporary files at once. It answers 409 upload_in_progress when
// another PUT holds the asset. The lock is renewed until the returned
// function releases it. When Redis does not answer, the upload goes on
// unlocked (the row lock at commit still orders the writes): an outage of
// the lock must not stop uploads.
func (s *Server) lockUpload(ctx context.Context, log *slog.Logger, asset uuid.UUID) (release func(), err error) {
	release, err = s.hold(ctx, log, "lightbox:upload-lock:"+asset.String())
	if errors.Is(err, redislock.ErrNotObtained) {
		return nil, apiError(http.StatusConflict, "upload_in_progress", "Another upload to this URL is in progress; wait for it to end.")
	}
	return release, err
}

// holdWait is how long hold waits for Redis before going on unlocked. A
// Redis that is down refuses at once; this bounds one that hangs. It is
// seconds, not less: on a busy machine a live Redis can take over half a
// second to answer, and a lock given up then lets a replayed PUT stream
// beside the one that holds it.
const holdWait = 5 * time.Second

// hold takes the lock key, shared by every server process, and renews it
// until the returned function releases it. It answers
// redislock.ErrNotObtained while another holds key. When Redis does not
// answer within holdWait, it logs and lets the caller go on unlocked.
func (s *Server) hold(ctx context.Context, log *slog.Logger, key string) (release func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, holdWait)
	defer cancel()
	lock, err := s.locks.Obtain(ctx, key, lockTTL, nil)
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		return nil, err
	case err != nil:
		log.Warn("lock unavailable; going on unlocked", "lock", key, "err", err)
		return func() {}, nil
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(lockTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				if err := lock.Refresh(ctx, lockTTL, nil); err != nil {
					log.Warn("lock not renewed", "lock", key, "err", err)
				}
				cancel()
			}
		}
	}()
	return func() {
		close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := lock.Release(ctx); err != nil && !errors.Is(err, redislock.ErrLockNotHeld) {
			log.Warn("lock not released; it expires", "lock", key, "err", err)
		}
	}, nil
}
