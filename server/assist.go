package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/assist"
	"lightbox/store"
)

// suggestCull answers which photos of a project the assistant would
// reject and pick (app.SuggestCull), changing nothing.
func (s *Server) suggestCull(c *gin.Context) {
	p, err := s.ownProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		Strictness   map[string]json.RawMessage `json:"strictness"`
		KeepPerGroup *int                       `json:"keepPerGroup"`
		Mark         *string                    `json:"mark"`
	}
	// Every field is optional, so is the body.
	if c.Request.ContentLength != 0 {
		if err := decodeJSON(c, &in); err != nil {
			fail(c, err)
			return
		}
	}
	errs := app.FieldErrors{}
	req := app.CullRequest{Strictness: strictness(errs, "strictness", in.Strictness)}
	if k := in.KeepPerGroup; k != nil {
		if *k < 0 || *k > app.MaxKeepPerGroup {
			errs.Add("keepPerGroup", "must be a whole number from 0 to 10")
		}
		req.KeepPerGroup = *k
	}
	if m := in.Mark; m != nil {
		if !slices.Contains(app.Marks, *m) {
			errs.Add("mark", "must be flags, stars or labels")
		}
		req.Mark = *m
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	sg, err := s.app.SuggestCull(c.Request.Context(), principal(c).ID, p.ID, req)
	if err != nil {
		fail(c, err)
		return
	}
	actions := make([]map[string]any, len(sg.Actions))
	for i, ch := range sg.Actions {
		actions[i] = cullActionJSON(ch)
	}
	c.JSON(http.StatusOK, struct {
		assist.Suggestion
		Strictness assist.Strictness `json:"strictness"`
		Actions    []map[string]any  `json:"actions"`
	}{sg.Suggestion, sg.Strictness, actions})
}

// cullActionJSON is ch as cull:applyAction takes it.
func cullActionJSON(ch store.RatingChange) map[string]any {
	out := map[string]any{"assetId": ch.AssetID, "assisted": ch.Assisted}
	if ch.Picked != nil {
		out["picked"] = *ch.Picked
	}
	if ch.Rejected != nil {
		out["rejected"] = *ch.Rejected
	}
	if ch.Rating != nil || ch.ClearRating {
		out["rating"] = ch.Rating
	}
	if ch.ColorLabel != nil || ch.ClearColorLabel {
		out["colorLabel"] = ch.ColorLabel
	}
	return out
}

// strictness reads a strictness as clients send it, naming its fields
// under field: each criterion a number from 0 to 1, or "off" or null to
// turn it off.
func strictness(errs app.FieldErrors, field string, in map[string]json.RawMessage) assist.Strictness {
	out := assist.Strictness{}
	for c, raw := range in {
		name := field + "." + c
		if !slices.Contains(assist.Criteria, c) {
			errs.Add(name, "is no criterion: "+strings.Join(assist.Criteria, ", ")+" are")
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			v = raw // a number past a float's range
		}
		switch v := v.(type) {
		case nil:
			out[c] = nil
		case string:
			if v != "off" {
				errs.Add(name, `must be a number from 0 to 1, "off" or null`)
			}
			out[c] = nil
		case float64:
			if v < 0 || v > 1 {
				errs.Add(name, `must be a number from 0 to 1, "off" or null`)
			}
			out[c] = &v
		default:
			errs.Add(name, `must be a number from 0 to 1, "off" or null`)
		}
	}
	return out
}

// cullPreferencesJSON is a person's strictness as the API shows it.
type cullPreferencesJSON struct {
	Strictness  assist.Strictness   `json:"strictness"`
	Base        assist.Strictness   `json:"base"`
	Adjustments []assist.Adjustment `json:"adjustments"`
	LearnSince  *time.Time          `json:"learnSince"`
}

// answerCullPreferences answers with p, or fails with err.
func answerCullPreferences(c *gin.Context, p *app.CullStrictness, err error) {
	if err != nil {
		fail(c, err)
		return
	}
	out := cullPreferencesJSON{Strictness: p.Effective, Base: p.Base, Adjustments: p.Adjustments, LearnSince: p.LearnSince}
	if out.Adjustments == nil {
		out.Adjustments = []assist.Adjustment{}
	}
	if t := out.LearnSince; t != nil {
		utc := t.UTC()
		out.LearnSince = &utc
	}
	c.JSON(http.StatusOK, out)
}

// getCullPreferences answers the caller's strictness, learned from what
// they decided by hand.
func (s *Server) getCullPreferences(c *gin.Context) {
	p, err := s.app.CullPreferences(c.Request.Context(), principal(c).ID)
	answerCullPreferences(c, p, err)
}

// putCullPreferences sets the caller's base strictness.
func (s *Server) putCullPreferences(c *gin.Context) {
	var in struct {
		Strictness map[string]json.RawMessage `json:"strictness"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	if in.Strictness == nil {
		errs.Add("strictness", "is required: an object of criteria")
	}
	base := strictness(errs, "strictness", in.Strictness)
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	p, err := s.app.SetCullStrictness(c.Request.Context(), principal(c).ID, base)
	answerCullPreferences(c, p, err)
}

// deleteCullPreferences sets the caller's strictness back to the
// defaults and forgets what their decisions taught so far.
func (s *Server) deleteCullPreferences(c *gin.Context) {
	p, err := s.app.ResetCullPreferences(c.Request.Context(), principal(c).ID)
	answerCullPreferences(c, p, err)
}

// judgeProject starts a project:signals run: the project's photos
// ingested before the judged signals existed get them from their
// previews. It answers 202 with the job; cull:suggest's counts.unjudged
// falls to 0 as it runs.
func (s *Server) judgeProject(c *gin.Context) {
	p, err := s.ownProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	job, err := s.app.JudgeProject(c.Request.Context(), p.ID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"queuedJobs": []uuid.UUID{job.ID}})
}
