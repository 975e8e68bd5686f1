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

	"github.com/go-redis/redis_rate/v10"
	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/embedding"
	"lightbox/store"
	"lightbox/tasks"
)

func init() { handle(tasks.TypeEmbed, (*Worker).embedAsset) }

// embedAsset computes an asset's embedding from its thumbnail and makes it
// search-ready, then records its faces job when its project detects
// faces. Calls to an outside provider spend a budget shared by all
// workers; a task that finds it spent waits without spending a retry.
func (w *Worker) embedAsset(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.EmbedPayload](t)
	if err != nil {
		return err
	}
	if p.Model != w.embedder.Model() {
		return badInput("unknown_model", "This worker embeds with %q, not %q.", w.embedder.Model(), p.Model)
	}
	img, _, err := w.derivedImage(ctx, p.AssetID, blob.KindThumbnail)
	if err != nil {
		return err
	}
	if err := w.spend(ctx, "embed:"+p.Model, "embedding provider", w.embedLimit); err != nil {
		return err
	}
	vec, err := w.embedder.Embed(ctx, img)
	var limited *embedding.RateLimitedError
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
	if !ready {
		return nil
	}
	if err := w.recordFaces(ctx, p.ProjectID, p.AssetID); err != nil {
		return err
	}
	return w.scheduleCluster(ctx, p.ProjectID)
}

// derivedImage reads and decodes one of an asset's derived files (blob.KindThumbnail
// or blob.KindPreview), which are upright JPEGs, and returns its bytes
// too.
func (w *Worker) derivedImage(ctx context.Context, asset uuid.UUID, kind string) (image.Image, []byte, error) {
	f, _, err := w.blobs.Open(ctx, blob.DerivedKey(asset, kind))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil, badInput(kind+"_missing", "The asset has no %s; ingest it first.", kind)
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, err
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	return img, b, nil
}

// spend takes one call to an outside service from the budget that key
// names, shared by all workers; nil limit is no budget. A spent budget is
// a wait, not a failure (tasks.RateLimited). A limiter that does not
// answer lets the call through rather than stop the work.
func (w *Worker) spend(ctx context.Context, key, service string, limit *redis_rate.Limit) error {
	if limit == nil {
		return nil
	}
	res, err := w.limiter.Allow(ctx, key, *limit)
	if err != nil {
		w.log.Warn("rate limiter unavailable; call allowed", "limit", key, "err", err)
		return nil
	}
	if res.Allowed == 0 {
		return tasks.RateLimited(service, res.RetryAfter)
	}
	return nil
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
