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

// uploadLockTTL bounds how long a server that died mid-upload keeps an
// upload locked; a live upload renews its lock every third of it.
const uploadLockTTL = 30 * time.Second

// lockUpload lets one PUT at a time write an asset's bytes, across every
// server process: a replayed URL cannot stream many copies of a large file
// into temporary files at once. It answers 409 upload_in_progress when
// another PUT holds the asset. The lock is renewed until the returned
// function releases it. When Redis does not answer, the upload goes on
// unlocked (the row lock at commit still orders the writes): an outage of
// the lock must not stop uploads.
func (s *Server) lockUpload(ctx context.Context, log *slog.Logger, asset uuid.UUID) (release func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	lock, err := s.uploads.Obtain(ctx, "lightbox:upload-lock:"+asset.String(), uploadLockTTL, nil)
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		return nil, apiError(http.StatusConflict, "upload_in_progress", "Another upload to this URL is in progress; wait for it to end.")
	case err != nil:
		log.Warn("upload lock unavailable; upload goes on unlocked", "assetId", asset, "err", err)
		return func() {}, nil
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(uploadLockTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				if err := lock.Refresh(ctx, uploadLockTTL, nil); err != nil {
					log.Warn("upload lock not renewed", "assetId", asset, "err", err)
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
			log.Warn("upload lock not released; it expires", "assetId", asset, "err", err)
		}
	}, nil
}
