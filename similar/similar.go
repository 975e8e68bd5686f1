// Package similar provides "more like this" over a project's embeddings:
// an exact ranking by cosine similarity (the dot product of the stored,
// L2-normalised vectors) computed in memory, where Postgres without a
// vector index takes over a second for 100,000 photos.
//
// Each server process keeps a copy of the vectors of the projects it was
// asked about, loaded from Postgres on first use. Every query first reads
// the vectors stored or replaced since the copy last looked, back to the
// start of the oldest transaction then open (an index on
// embeddings(model, created_at) makes that a short range scan), and the
// best candidates are checked to still be assets of the project, so a
// deleted asset never shows. The scores are those the SQL ranking gave:
// float32 products summed in float32, in vector order, given as the
// shortest decimal; ties go to the smaller asset id.
package similar

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
)

// overlap is how far back each refresh reads before the time the last
// one was told to ask from, for the moment a transaction takes to appear
// in pg_stat_activity.
const overlap = time.Second

// Hit is an asset and its cosine similarity to the query's.
type Hit struct {
	AssetID uuid.UUID
	Score   float64
}

// Index holds the vectors of recently asked projects, up to MaxVectors in
// all; the least recently asked projects are dropped beyond it.
type Index struct {
	Store      *store.Store
	MaxVectors int // 0 means 2,000,000 (about 700 MB for 80-dimensional vectors)

	mu       sync.Mutex
	projects map[key]*project
}

type key struct {
	project uuid.UUID
	model   string
}

// project is one project's vectors of one model.
type project struct {
	mu      sync.Mutex
	loaded  bool
	since   time.Time // where the next refresh reads from
	slot    map[uuid.UUID]int
	ids     []uuid.UUID
	vectors [][]float32 // nil where an asset was found gone
	used    time.Time
}

// Similar ranks the other assets of asset's project by similarity to it,
// best first, limit at most. An asset without a vector of model has none.
func (x *Index) Similar(ctx context.Context, projectID, asset uuid.UUID, model string, limit int) ([]Hit, error) {
	p := x.project(projectID, model)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.refresh(ctx, x.Store, projectID, model); err != nil {
		return nil, err
	}
	i, ok := p.slot[asset]
	if !ok || p.vectors[i] == nil {
		return []Hit{}, nil
	}
	for {
		hits := p.rank(p.vectors[i], asset, limit)
		ids := make([]uuid.UUID, len(hits))
		for k, h := range hits {
			ids[k] = h.AssetID
		}
		live, err := x.Store.AssetsInProject(ctx, projectID, ids)
		if err != nil {
			return nil, err
		}
		if len(live) == len(ids) {
			x.trim()
			return hits, nil
		}
		// Deleted since they were loaded: forget them and rank again.
		for _, id := range ids {
			if !slices.Contains(live, id) {
				p.vectors[p.slot[id]] = nil
			}
		}
	}
}

func (x *Index) project(id uuid.UUID, model string) *project {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.projects == nil {
		x.projects = map[key]*project{}
	}
	k := key{id, model}
	p := x.projects[k]
	if p == nil {
		p = &project{slot: map[uuid.UUID]int{}}
		x.projects[k] = p
	}
	p.used = time.Now()
	return p
}

// trim drops the least recently asked projects while the copies hold
// more than MaxVectors.
func (x *Index) trim() {
	x.mu.Lock()
	defer x.mu.Unlock()
	limit := cmp.Or(x.MaxVectors, 2_000_000)
	total := 0
	keys := make([]key, 0, len(x.projects))
	for k, p := range x.projects {
		total += len(p.ids) // read without p.mu: an estimate is enough
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return x.projects[a].used.Compare(x.projects[b].used) })
	for _, k := range keys[:max(0, len(keys)-1)] {
		if total <= limit {
			return
		}
		total -= len(x.projects[k].ids)
		delete(x.projects, k)
	}
}

// refresh brings p up to date with Postgres.
func (p *project) refresh(ctx context.Context, st *store.Store, id uuid.UUID, model string) error {
	var since time.Time
	if p.loaded {
		since = p.since
	}
	rows, next, err := st.ProjectVectors(ctx, id, model, since)
	if err != nil {
		return err
	}
	for _, r := range rows {
		i, ok := p.slot[r.AssetID]
		if !ok {
			i = len(p.ids)
			p.slot[r.AssetID] = i
			p.ids = append(p.ids, r.AssetID)
			p.vectors = append(p.vectors, nil)
		}
		p.vectors[i] = r.Vector
	}
	p.loaded, p.since = true, next.Add(-overlap)
	return nil
}

// rank returns the limit vectors closest to q, other than self's.
func (p *project) rank(q []float32, self uuid.UUID, limit int) []Hit {
	h := &worst{}
	for i, v := range p.vectors {
		if v == nil || p.ids[i] == self {
			continue
		}
		c := Hit{AssetID: p.ids[i], Score: float64(dot(q, v))}
		if h.Len() < limit {
			heap.Push(h, c)
		} else if better(c, (*h)[0]) {
			(*h)[0] = c
			heap.Fix(h, 0)
		}
	}
	out := []Hit(*h)
	slices.SortFunc(out, func(a, b Hit) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	for i := range out {
		out[i].Score = shortest(float32(out[i].Score))
	}
	return out
}

// shortest is f as Postgres sends a real: the shortest decimal that reads
// back as f, so 0.7518765 rather than 0.7518764734268188.
func shortest(f float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return v
}

// dot is the SQL ranking's sum: float32 products added in float32 over
// the length both vectors have. The conversions keep each product
// rounded, as Postgres rounds it, even where the CPU could fuse them.
func dot(a, b []float32) float32 {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	var s float32
	for i := range a {
		s += float32(a[i] * b[i])
	}
	return s
}

// better orders hits as the SQL did: score descending, then asset id.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return bytes.Compare(a.AssetID[:], b.AssetID[:]) < 0
}

// worst is a heap of hits with the worst on top.
type worst []Hit

func (h worst) Len() int           { return len(h) }
func (h worst) Less(i, j int) bool { return better(h[j], h[i]) }
func (h worst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *worst) Push(x any)        { *h = append(*h, x.(Hit)) }
func (h *worst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
