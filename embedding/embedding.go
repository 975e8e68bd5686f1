// Package embedding turns an image into a fixed-length vector, so that photos
// can be compared with Cosine for "more like this".
//
// Two Embedders are provided:
//
//   - Builtin ("builtin-descriptor-v1"): a deterministic, hand-made image
//     descriptor computed locally in a few milliseconds. It is not a learned,
//     semantic embedding; see Builtin for what it captures.
//   - HTTP: posts the image to an embedding service (a model server) and
//     returns its vector. A 429 answer becomes a *RateLimitedError carrying
//     Retry-After, so callers can wait without counting a failure.
//
// An HTTP provider that embeds text too (CLIP-style) is also a
// TextEmbedder, so a search's words can be compared with the photos'
// vectors. Builtin has no text side.
//
// Vectors from different models are not comparable; store them with
// Model(). Every vector returned here is L2-normalised, so Cosine is a plain
// dot product.
package embedding

import (
	"context"
	"errors"
	"image"
	"math"
)

// Embedder makes one vector per image. Implementations are safe for
// concurrent use.
type Embedder interface {
	// Model names the vector space, e.g. "builtin-descriptor-v1".
	Model() string
	// Dim is the length of every vector Embed returns.
	Dim() int
	// Embed returns the image's unit-length vector. A small image (the
	// ingest thumbnail, 320 px) is enough.
	Embed(ctx context.Context, img image.Image) ([]float32, error)
}

// TextEmbedder maps text into the same space as an Embedder's images.
type TextEmbedder interface {
	// EmbedText returns text's unit-length vector.
	EmbedText(ctx context.Context, text string) ([]float32, error)
}

// Cosine returns the cosine similarity of a and b, from -1 to 1. It is 0
// when the lengths differ or either vector is zero.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// normalize scales v to unit length in place.
func normalize(v []float32) error {
	var n float64
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return errors.New("embed: vector has a NaN or infinite value")
		}
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return errors.New("embed: vector is all zeros")
	}
	s := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= s
	}
	return nil
}
