package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/store"
)

// ownProject loads the caller's project named by the path.
func (s *Server) ownProject(c *gin.Context) (*store.Project, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, err
	}
	return s.store.Project(c.Request.Context(), principal(c).ID, id)
}

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
			return 0, fieldErrors{"limit": "must be 1 to 100"}.err()
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
	if err == nil && (q == "" || len(q) > 500) {
		err = fieldErrors{"q": "must be 1 to 500 characters"}.err()
	}
	if err != nil {
		fail(c, err)
		return
	}
	hits, err := s.store.Search(c.Request.Context(), p.ID, q, limit)
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]hitJSON, len(hits))
	for i, h := range hits {
		out[i] = hitJSON{AssetID: h.AssetID, Score: h.Score, Highlights: append([]string{}, h.Highlights...)}
	}
	c.JSON(http.StatusOK, gin.H{"results": out, "tookMs": time.Since(start).Milliseconds()})
}

// similar ranks the project's other assets by embedding similarity.
func (s *Server) similar(c *gin.Context) {
	start := time.Now()
	a, _, err := s.ownAsset(c)
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
