package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // thumbnails are JPEG
	"io"
	"math"
	"time"

	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/embed"
	"lightbox/store"
	"lightbox/tasks"
)

func init() { handle(tasks.TypeEmbed, (*Worker).embedAsset) }

// embedAsset computes an asset's embedding from its thumbnail and makes it
// search-ready. Calls to an outside provider spend a budget shared by all
// workers; a task that finds it spent waits without spending a retry.
func (w *Worker) embedAsset(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.EmbedPayload](t)
	if err != nil {
		return err
	}
	if p.Model != w.embedder.Model() {
		return badInput("unknown_model", "This worker embeds with %q, not %q.", w.embedder.Model(), p.Model)
	}
	img, err := w.thumbnail(ctx, p)
	if err != nil {
		return err
	}
	if w.embedLimit != nil {
		res, err := w.limiter.Allow(ctx, "embed:"+p.Model, *w.embedLimit)
		if err != nil {
			w.log.Warn("embedding limiter unavailable; call allowed", "err", err)
		} else if res.Allowed == 0 {
			return tasks.RateLimited("embedding provider", res.RetryAfter)
		}
	}
	vec, err := w.embedder.Embed(ctx, img)
	var limited *embed.RateLimitedError
	if errors.As(err, &limited) {
		return tasks.RateLimited("embedding provider", max(limited.RetryAfter, time.Second))
	}
	if err != nil {
		return err
	}
	ready, err := w.st.SaveEmbedding(ctx, p.AssetID, p.Model, normalize(vec))
	if errors.Is(err, store.ErrNotFound) {
		return badInput("not_found", "The asset no longer exists.")
	}
	if err != nil {
		return err
	}
	if ready {
		return w.scheduleCluster(ctx, p.ProjectID)
	}
	return nil
}

func (w *Worker) thumbnail(ctx context.Context, p tasks.EmbedPayload) (image.Image, error) {
	f, _, err := w.blobs.Open(ctx, blob.DerivedKey(p.AssetID, blob.KindThumbnail))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, badInput("thumbnail_missing", "The asset has no thumbnail; ingest it first.")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("decode thumbnail: %w", err)
	}
	return img, nil
}

// normalize scales v to unit length, so stored vectors compare by dot product.
func normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return v
	}
	n := float32(1 / math.Sqrt(sum))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * n
	}
	return out
}
