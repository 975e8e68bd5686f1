package store

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// SearchHit is one asset that matched a search.
type SearchHit struct {
	AssetID    uuid.UUID `db:"asset_id"`
	Score      float64   `db:"score"`
	Highlights Strings   `db:"highlights"`
}

// SearchFilter narrows a search; zero fields do not filter. The rating
// filters read User's ratings.
type SearchFilter struct {
	User      uuid.UUID
	Picked    *bool
	Rejected  *bool
	RatingMin *int
	Camera    string     // a part of the camera's make and model, any case
	From, To  *time.Time // capture time, both ends included
	Readiness []string   // asset states among cull, search and ai; all three when empty
	// EyesClosed and FaceOutOfFocus are AssetFilter's.
	EyesClosed     *bool
	FaceOutOfFocus *bool

	// ColorLabels and ClientFavorite are AssetFilter's.
	ColorLabels    []string
	ClientFavorite *uuid.UUID
}

// searchable are the states whose assets a search finds.
var searchable = []string{AssetCull, AssetSearch, AssetAI}

// filterSQL is f as a join and conditions on asset_search a, with its
// arguments numbered from n.
func (f SearchFilter) filterSQL(n int) (join, where string, args []any) {
	states := f.Readiness
	if len(states) == 0 {
		states = searchable
	}
	camera := containing(f.Camera)
	p := func(i int) string { return "$" + strconv.Itoa(n+i) }
	join = ` LEFT JOIN ratings r ON r.asset_id = a.asset_id AND r.user_id = ` + p(0) + faceJoin + `a.asset_id`
	where = ` AND a.status = ANY(` + p(1) + `::text[])
		AND (` + p(2) + `::boolean IS NULL OR coalesce(r.picked, false) = ` + p(2) + `)
		AND (` + p(3) + `::boolean IS NULL OR coalesce(r.rejected, false) = ` + p(3) + `)
		AND (` + p(4) + `::int IS NULL OR r.rating >= ` + p(4) + `)
		AND (` + p(5) + ` = '' OR a.camera ILIKE ` + p(5) + `)
		AND (` + p(6) + `::timestamptz IS NULL OR a.captured_at >= ` + p(6) + `)
		AND (` + p(7) + `::timestamptz IS NULL OR a.captured_at <= ` + p(7) + `)
		AND (cardinality(` + p(10) + `::text[]) = 0 OR coalesce(r.color_label, '` + NoColorLabel + `') = ANY(` + p(10) + `))` +
		faceFilters(p(8), p(9)) + clientFavoriteSQL(p(11), "a.asset_id", "a.project_id")
	return join, where, []any{f.User, pq.Array(states), f.Picked, f.Rejected, f.RatingMin, camera, f.From, f.To,
		f.EyesClosed, f.FaceOutOfFocus, pq.Array(append([]string{}, f.ColorLabels...)), f.ClientFavorite}
}

// containing is an ILIKE pattern that matches text holding s, or "" for
// an empty s.
func containing(s string) string {
	if s == "" {
		return ""
	}
	return "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s) + "%"
}

// Search finds a project's assets matching q (web search syntax: words,
// "quoted phrases", -exclusions, or) and f. q is matched against
// asset_search.doc, which triggers on assets keep: file name (split on
// separators), camera, lens and capture date in words, in the 'simple'
// configuration, which keeps names and models as they are written. Every
// match is ranked (a narrow table keeps that scan short); only the page of
// best ones is split into highlights. The query is written out where it
// filters rather than read from the CTE, so the planner sees it and
// estimates how much it matches: a query matching most of a project is
// scanned in parallel, one matching a few photos through the GIN index. An empty q matches every asset f lets
// through, newest capture first.
func (s *Store) Search(ctx context.Context, project uuid.UUID, q string, f SearchFilter, limit int) ([]SearchHit, error) {
	join, where, args := f.filterSQL(4)
	var hits []SearchHit
	err := s.db.SelectContext(ctx, &hits, `
		WITH q AS (SELECT websearch_to_tsquery('simple', $2) AS query),
		top AS (SELECT a.asset_id AS id, a.captured_at, CASE WHEN $2 = '' THEN 0 ELSE ts_rank(a.doc, websearch_to_tsquery('simple', $2)) END AS score
		        FROM asset_search a`+join+`
		        WHERE a.project_id = $1`+where+` AND ($2 = '' OR a.doc @@ websearch_to_tsquery('simple', $2))
		        ORDER BY score DESC, a.captured_at DESC NULLS LAST, a.asset_id LIMIT $3)
		SELECT d.id AS asset_id, top.score,
		       CASE WHEN $2 = '' THEN '{}' ELSE array_remove(ARRAY[
		           CASE WHEN to_tsvector('simple', regexp_replace(d.filename, '[._-]+', ' ', 'g')) @@ q.query THEN 'filename' END,
		           CASE WHEN to_tsvector('simple', concat_ws(' ', d.camera_make, d.camera_model)) @@ q.query THEN 'camera' END,
		           CASE WHEN to_tsvector('simple', coalesce(d.lens_model, '')) @@ q.query THEN 'lens' END,
		           CASE WHEN to_tsvector('simple', coalesce(to_char(d.captured_at AT TIME ZONE 'UTC', 'YYYY-MM-DD YYYY FMMonth FMDay'), '')) @@ q.query THEN 'capturedAt' END
		       ], NULL) END AS highlights
		FROM top JOIN assets d ON d.id = top.id, q
		ORDER BY top.score DESC, top.captured_at DESC NULLS LAST, d.id`, append([]any{project, q, limit}, args...)...)
	return hits, err
}

// NearestAssets ranks a project's searchable assets by the cosine of their
// model vectors with vec, which must be unit length like the stored ones.
// Like SimilarAssets it scans the project's vectors.
func (s *Store) NearestAssets(ctx context.Context, project uuid.UUID, model string, vec []float32, f SearchFilter, limit int) ([]Similar, error) {
	join, where, args := f.filterSQL(5)
	var out []Similar
	err := s.db.SelectContext(ctx, &out, `
		SELECT e.asset_id, (SELECT sum(x * y) FROM unnest(e.vector, $3::real[]) AS v(x, y)) AS score
		FROM asset_search a JOIN embeddings e ON e.asset_id = a.asset_id AND e.model = $2`+join+`
		WHERE a.project_id = $1`+where+`
		ORDER BY score DESC, e.asset_id LIMIT $4`, append([]any{project, model, pq.Array(vec), limit}, args...)...)
	return out, err
}

// fusePool is how many assets each ranking offers to SemanticSearch: the
// most a search answers, so an asset a page could show is never cut
// before the two rankings meet.
const fusePool = 100

// fuseK damps the weight of the first places in reciprocal rank fusion;
// 60 is the value of the method's authors, used by most search engines.
const fuseK = 60

// SemanticSearch is Search ranked by meaning as well: the text and
// metadata matches of q and the assets nearest to q's vector (vec, in
// model's space) are merged by reciprocal rank fusion. An asset scores
// the sum of 1/(60 + its place) over the two rankings, so one found by both
// comes before one found by either, and an exact word match outranks a
// photo that only looks like the words at the same place. Assets near the
// vector carry the highlight "embedding". Every asset with a vector has a
// place, so the answer is the nearest photos even when no word matches.
func (s *Store) SemanticSearch(ctx context.Context, project uuid.UUID, q string, f SearchFilter, model string, vec []float32, limit int) ([]SearchHit, error) {
	text, err := s.Search(ctx, project, q, f, fusePool)
	if err != nil {
		return nil, err
	}
	near, err := s.NearestAssets(ctx, project, model, vec, f, fusePool)
	if err != nil {
		return nil, err
	}
	return fuse(text, near, limit), nil
}

func fuse(text []SearchHit, near []Similar, limit int) []SearchHit {
	byID := map[uuid.UUID]*SearchHit{}
	hit := func(id uuid.UUID) *SearchHit {
		h := byID[id]
		if h == nil {
			h = &SearchHit{AssetID: id, Highlights: Strings{}}
			byID[id] = h
		}
		return h
	}
	for i, t := range text {
		h := hit(t.AssetID)
		h.Score += 1 / float64(fuseK+i+1)
		h.Highlights = append(h.Highlights, t.Highlights...)
	}
	for i, n := range near {
		h := hit(n.AssetID)
		h.Score += 1 / float64(fuseK+i+1)
		h.Highlights = append(h.Highlights, "embedding")
	}
	out := make([]SearchHit, 0, len(byID))
	for _, h := range byID {
		out = append(out, *h)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].AssetID.String() < out[j].AssetID.String()
	})
	return out[:min(len(out), limit)]
}

// Stats counts a project's assets by stage, from the counts the triggers
// keep.
func (s *Store) Stats(ctx context.Context, project uuid.UUID) (ProjectStats, error) {
	var st ProjectStats
	err := s.db.GetContext(ctx, &st, `SELECT `+statsColumns+` FROM project_asset_counts c WHERE c.project_id = $1`, project)
	return st, err
}
