// Package seed fills a project with many processed assets for benchmarks:
// rows that look like a real shoot, generated from the corpus photos' own
// perceptual hashes, EXIF, quality signals and built-in embeddings, varied
// per row, and written with COPY so 100,000 of them take seconds.
package seed

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"lightbox/embedding"
	"lightbox/imaging"
	"lightbox/testsupport/testenv"
)

// Model is the embedding model of the seeded vectors: the built-in
// embedder's, with its dimension.
const Model = embedding.BuiltinModel

// DefaultSize is the number of assets Size gives without LIGHTBOX_SCALE_ASSETS.
const DefaultSize = 100_000

// Size is the number of assets to seed: LIGHTBOX_SCALE_ASSETS, so a quick
// check can run the same benchmark on a few thousand.
func Size(tb testing.TB) int {
	tb.Helper()
	v := os.Getenv("LIGHTBOX_SCALE_ASSETS")
	if v == "" {
		return DefaultSize
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 100 {
		tb.Fatalf("LIGHTBOX_SCALE_ASSETS=%q: want a whole number of at least 100", v)
	}
	return n
}

// Asset is one seeded row as a benchmark needs to find it again.
type Asset struct {
	ID        uuid.UUID
	CreatedAt time.Time
	Filename  string
	Camera    string // make and model
	Captured  time.Time
	Embedded  bool // has a vector of Model
	Listed    bool // cull, search or ai: what search and clustering read
}

// Seeded is what Fill wrote.
type Seeded struct {
	Project uuid.UUID
	Model   string  // the embedding model of the vectors
	Assets  []Asset // in upload (list) order
}

// Photo is what ingest learned from one corpus photo.
type Photo struct {
	Name   string
	Bytes  int64
	Result *imaging.Result
	Vector []float32 // the built-in embedder's
	prefix string    // file name pattern its camera writes
	camera string
}

// Fill writes n processed assets into project: 95% ai-ready, 3% search-ready,
// 1% embedding (no vector yet) and 1% failed. It uses the built-in
// embedder's model and dimension.
func Fill(tb testing.TB, env *testenv.Env, project uuid.UUID, n int) *Seeded {
	tb.Helper()
	srcs := Photos(tb)
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	out := &Seeded{Project: project, Model: Model, Assets: make([]Asset, 0, n)}

	ctx := context.Background()
	tx, err := env.DB.BeginTxx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	assets := copyIn(tb, tx, "assets", "id", "project_id", "filename", "content_type", "byte_size", "blob_key",
		"checksum_sha256", "upload_size", "uploaded_at", "status", "finalized_at", "captured_at", "ingested_at",
		"width_px", "height_px", "camera_make", "camera_model", "lens_model", "focal_length_mm", "shutter_speed",
		"aperture", "iso", "exif", "quality", "error_code", "error_message", "created_at", "updated_at")

	// The shoot: capture times advance by burst frames (under 2 s), single
	// shots (seconds to minutes) and the odd break of hours, from a start
	// far enough back that n shots fit.
	now := time.Now().UTC().Truncate(time.Second)
	captured := now.AddDate(0, 0, -max(1, n/1000))
	uploaded := now.Add(-time.Hour)
	counters := map[string]int{}
	var (
		sceneSrc    *Photo
		sceneHash   uint64
		sceneVector []float32
	)
	hashes := make([]uint64, n)
	vectors := make([][]float32, n)
	for i := range n {
		burst := i > 0 && rng.Float64() < 0.35
		switch {
		case burst:
			captured = captured.Add(time.Duration(200+rng.IntN(1600)) * time.Millisecond)
		case rng.Float64() < 0.004:
			captured = captured.Add(time.Duration(2+rng.IntN(10)) * time.Hour)
		default:
			captured = captured.Add(time.Duration(5+rng.IntN(180)) * time.Second)
		}
		// A new scene now and then: another corpus photo, its hash moved
		// far (20-28 bits) and its vector moved well away, so scenes are
		// distinct photos while the shots of one scene are neighbours.
		if sceneSrc == nil || (!burst && rng.Float64() < 0.5) {
			sceneSrc = &srcs[rng.IntN(len(srcs))]
			sceneHash = flip(rng, sceneSrc.Result.PHash, 20+rng.IntN(9))
			sceneVector = jitter(rng, sceneSrc.Vector, 0.08)
		}
		src := sceneSrc
		hash := flip(rng, sceneHash, rng.IntN(4)) // burst frames: near copies
		if !burst {
			hash = flip(rng, sceneHash, 6+rng.IntN(9))
		}
		if i > 0 && rng.Float64() < 0.01 {
			hash = flip(rng, hashes[rng.IntN(i)], rng.IntN(3)) // the same photo uploaded again
		}
		hashes[i] = hash
		vectors[i] = jitter(rng, sceneVector, 0.02)

		id := uuid.New()
		counters[src.prefix]++
		name := fmt.Sprintf(src.prefix, counters[src.prefix]%10000)
		status := "ai"
		switch r := rng.Float64(); {
		case r < 0.01:
			status = "failed"
		case r < 0.02:
			status = "cull"
		case r < 0.05:
			status = "search"
		}
		created := uploaded.Add(time.Duration(i) * 3 * time.Millisecond)
		m := src.Result.Metadata
		m.CapturedAt = captured.Format("2006-01-02T15:04:05")
		exif, _ := json.Marshal(m)
		q := src.Result.Quality
		q.Sharpness *= 0.8 + 0.4*rng.Float64()
		quality, _ := json.Marshal(q)
		size := src.Bytes + rng.Int64N(src.Bytes/10+1)
		var errCode, errMsg *string
		if status == "failed" {
			code, msg := "corrupt_image", "The image data is damaged."
			errCode, errMsg = &code, &msg
		}
		sum := make([]byte, 32)
		for k := range sum {
			sum[k] = byte(rng.Uint32())
		}
		if _, err := assets.Exec(id.String(), project.String(), name, "image/jpeg", size,
			"originals/"+project.String()+"/"+id.String(), hex.EncodeToString(sum), size, created, status, created,
			captured, created, src.Result.Width, src.Result.Height, null(m.CameraMake), null(m.CameraModel), null(m.LensModel),
			nullNum(m.FocalLengthMm), null(m.ShutterSpeed), nullNum(m.Aperture), nullInt(m.ISO), string(exif), string(quality),
			errCode, errMsg, created, created); err != nil {
			tb.Fatal(err)
		}
		listed := status != "failed"
		out.Assets = append(out.Assets, Asset{ID: id, CreatedAt: created, Filename: name, Camera: src.camera,
			Captured: captured, Embedded: listed && status != "cull", Listed: listed})
	}
	closeCopy(tb, assets)

	ph := copyIn(tb, tx, "perceptual_hashes", "asset_id", "algorithm", "hash")
	for i, a := range out.Assets {
		if a.Listed {
			if _, err := ph.Exec(a.ID.String(), "phash-dct-64", int64(hashes[i])); err != nil {
				tb.Fatal(err)
			}
		}
	}
	closeCopy(tb, ph)

	em := copyIn(tb, tx, "embeddings", "asset_id", "model", "vector")
	var sb strings.Builder
	for i, a := range out.Assets {
		if !a.Embedded {
			continue
		}
		sb.Reset()
		sb.WriteByte('{')
		for k, x := range vectors[i] {
			if k > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
		}
		sb.WriteByte('}')
		if _, err := em.Exec(a.ID.String(), out.Model, sb.String()); err != nil {
			tb.Fatal(err)
		}
	}
	closeCopy(tb, em)
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	// What autovacuum would have done by the time anyone browses them.
	for _, table := range []string{"assets", "asset_search", "perceptual_hashes", "embeddings"} {
		if _, err := env.DB.ExecContext(ctx, "VACUUM ANALYZE "+table); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

func copyIn(tb testing.TB, tx *sqlx.Tx, table string, columns ...string) *sqlx.Stmt {
	tb.Helper()
	st, err := tx.Preparex(pq.CopyIn(table, columns...))
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

func closeCopy(tb testing.TB, st *sqlx.Stmt) {
	tb.Helper()
	if _, err := st.Exec(); err != nil {
		tb.Fatal(err)
	}
	if err := st.Close(); err != nil {
		tb.Fatal(err)
	}
}

// Photos runs the corpus photos through the imaging engine and the
// built-in embedder, as ingest would.
func Photos(tb testing.TB) []Photo {
	tb.Helper()
	dir := filepath.Join(testenv.Corpus(tb), "photos")
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	engine, err := imaging.New("", imaging.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	var out []Photo
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		res, err := engine.Process(ctx, data, imaging.Options{})
		if err != nil {
			tb.Fatalf("%s: %v", e.Name(), err)
		}
		vec, err := embedding.Builtin{}.Embed(ctx, res.Image)
		if err != nil {
			tb.Fatal(err)
		}
		m := res.Metadata
		out = append(out, Photo{Name: e.Name(), Bytes: int64(len(data)), Result: res, Vector: vec,
			prefix: prefix(m.CameraMake), camera: m.CameraMake + " " + m.CameraModel})
	}
	if len(out) == 0 {
		tb.Fatalf("no photos in %s", dir)
	}
	return out
}

// prefix is the file name pattern a camera maker writes.
func prefix(maker string) string {
	switch m := strings.ToLower(maker); {
	case strings.Contains(m, "canon"):
		return "IMG_%04d.JPG"
	case strings.Contains(m, "sony"):
		return "DSC%05d.JPG"
	case strings.Contains(m, "olympus"):
		return "P%07d.JPG"
	case strings.Contains(m, "nokia"):
		return "nokia_%06d.jpg"
	case strings.Contains(m, "minolta"):
		return "PICT%04d.JPG"
	}
	return "photo-%05d.jpg"
}

// flip changes k distinct random bits of h.
func flip(rng *rand.Rand, h uint64, k int) uint64 {
	for _, b := range rng.Perm(64)[:k] {
		h ^= 1 << b
	}
	return h
}

// jitter adds Gaussian noise of deviation sigma to each component of v
// and normalises the result, as stored vectors are.
func jitter(rng *rand.Rand, v []float32, sigma float64) []float32 {
	out := make([]float32, len(v))
	var norm float64
	for i, x := range v {
		y := float64(x) + sigma*rng.NormFloat64()
		out[i] = float32(y)
		norm += y * y
	}
	norm = math.Sqrt(norm)
	for i := range out {
		out[i] = float32(float64(out[i]) / norm)
	}
	return out
}

func null(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullNum(f float64) *float64 {
	if f == 0 {
		return nil
	}
	return &f
}

func nullInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}
