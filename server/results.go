package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/store"
)

type hitJSON struct {
	AssetID    uuid.UUID `json:"assetId"`
	Score      float64   `json:"score"`
	Highlights []string  `json:"highlights"`
}

// resultLimit reads ?limit= for search-like answers.
func resultLimit(c *gin.Context) (int, error) {
	limit := 20
	if s := c.Query("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return 0, app.FieldErrors{"limit": "must be 1 to 100"}.Err()
		}
		limit = n
	}
	return limit, nil
}

func (s *Server) search(c *gin.Context) {
	start := time.Now()
	p, err := s.ownProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	q := strings.TrimSpace(c.Query("q"))
	limit, err := resultLimit(c)
	switch {
	case err != nil:
	case q == "" || len(q) > 500:
		err = app.FieldErrors{"q": "must be 1 to 500 characters"}.Err()
	case !isText(q):
		err = app.FieldErrors{"q": "must be UTF-8 text without NUL characters"}.Err()
	}
	if err != nil {
		fail(c, err)
		return
	}
	s.answerSearch(c, start, p.ID, q, store.SearchFilter{User: principal(c).ID}, limit)
}

// searchFiltered is search with filters on the caller's ratings, the
// camera, the capture time and the readiness, in a JSON body. Without q it
// lists what the filters let through, newest capture first.
func (s *Server) searchFiltered(c *gin.Context) {
	start := time.Now()
	p, err := s.ownProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		Q       string `json:"q"`
		Limit   *int   `json:"limit"`
		Filters struct {
			Picked    *bool      `json:"picked"`
			Rejected  *bool      `json:"rejected"`
			RatingMin *int       `json:"ratingMin"`
			Camera    string     `json:"camera"`
			From      *time.Time `json:"from"`
			To        *time.Time `json:"to"`
			Readiness []string   `json:"readiness"`
			// Faces: see store.AssetFilter.
			EyesClosed     *bool `json:"eyesClosed"`
			FaceOutOfFocus *bool `json:"faceOutOfFocus"`

			// ColorLabel and ClientFavorite: see store.AssetFilter's.
			ColorLabel     []string `json:"colorLabel"`
			ClientFavorite string   `json:"clientFavorite"`
		} `json:"filters"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	q := strings.TrimSpace(in.Q)
	if len(q) > 500 {
		errs.Add("q", "must be at most 500 characters")
	}
	limit := 20
	if in.Limit != nil {
		if limit = *in.Limit; limit < 1 || limit > 100 {
			errs.Add("limit", "must be 1 to 100")
		}
	}
	fl := in.Filters
	f := store.SearchFilter{User: principal(c).ID, Picked: fl.Picked, Rejected: fl.Rejected, RatingMin: fl.RatingMin,
		ColorLabels: fl.ColorLabel, Camera: strings.TrimSpace(fl.Camera), From: fl.From, To: fl.To, EyesClosed: fl.EyesClosed,
		FaceOutOfFocus: fl.FaceOutOfFocus}
	if r := fl.RatingMin; r != nil && (*r < 1 || *r > 5) {
		errs.Add("filters.ratingMin", "must be a whole number from 1 to 5")
	}
	checkPhotoFilters(errs, "filters.", f.Camera, f.From, f.To)
	checkColorLabels(errs, "filters.colorLabel", f.ColorLabels)
	f.ClientFavorite = parseClientFavorite(errs, "filters.clientFavorite", fl.ClientFavorite)
	for _, r := range fl.Readiness {
		if r != store.AssetCull && r != store.AssetSearch && r != store.AssetAI {
			errs.Add("filters.readiness", "must list cull, search or ai")
		}
		f.Readiness = append(f.Readiness, r)
	}
	err = errs.Err()
	if err == nil {
		err = s.checkClientFavorite(c, p.ID, "filters.clientFavorite", f.ClientFavorite)
	}
	if err != nil {
		fail(c, err)
		return
	}
	s.answerSearch(c, start, p.ID, q, f, limit)
}

// answerSearch runs a search, by meaning as well when the embedding
// provider embeds q, and answers the search shape.
func (s *Server) answerSearch(c *gin.Context, start time.Time, project uuid.UUID, q string, f store.SearchFilter, limit int) {
	ctx := c.Request.Context()
	var hits []store.SearchHit
	var err error
	var vec []float32
	if q != "" {
		vec = s.textVector(ctx, q)
	}
	if vec != nil {
		hits, err = s.store.SemanticSearch(ctx, project, q, f, s.embedModel, vec, limit)
	} else {
		hits, err = s.store.Search(ctx, project, q, f, limit)
	}
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]hitJSON, len(hits))
	for i, h := range hits {
		out[i] = hitJSON{AssetID: h.AssetID, Score: h.Score, Highlights: append([]string{}, h.Highlights...)}
	}
	c.JSON(http.StatusOK, gin.H{"results": out, "semantic": vec != nil, "tookMs": time.Since(start).Milliseconds()})
}

// textVector is q's vector from the embedding provider, or nil when there
// is no text side or the provider failed: a search never fails for the
// provider's sake, it falls back to words only and the answer says
// "semantic": false.
func (s *Server) textVector(ctx context.Context, q string) []float32 {
	if s.texts == nil {
		return nil
	}
	vec, err := s.texts.EmbedText(ctx, q)
	if err != nil {
		s.log.WarnContext(ctx, "search falls back to words only: the embedding provider failed", "err", err)
		return nil
	}
	return vec
}

// similar ranks the project's other assets by embedding similarity.
func (s *Server) similar(c *gin.Context) {
	start := time.Now()
	a, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	limit, err := resultLimit(c)
	if err != nil {
		fail(c, err)
		return
	}
	sims, err := s.vectors.Similar(c.Request.Context(), a.ProjectID, a.ID, s.embedModel, limit)
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]hitJSON, len(sims))
	for i, h := range sims {
		out[i] = hitJSON{AssetID: h.AssetID, Score: h.Score, Highlights: []string{"embedding"}}
	}
	c.JSON(http.StatusOK, gin.H{"results": out, "tookMs": time.Since(start).Milliseconds()})
}

// stats counts the project's assets by stage. The answer is cached in
// Redis for up to 5 s: uploaders poll it while thousands of rows change.
func (s *Server) stats(c *gin.Context) {
	p, err := s.ownProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	key := "stats:" + p.ID.String()
	if b, err := s.rdb.Get(c.Request.Context(), key).Bytes(); err == nil {
		c.Data(http.StatusOK, "application/json; charset=utf-8", b)
		return
	}
	st, err := s.store.Stats(c.Request.Context(), p.ID)
	if err != nil {
		fail(c, err)
		return
	}
	b, _ := json.Marshal(st)
	s.rdb.Set(c.Request.Context(), key, b, 5*time.Second)
	c.Data(http.StatusOK, "application/json; charset=utf-8", b)
}
