package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/store"
)

type clusterJSON struct {
	ID            string          `json:"id"`
	ProjectID     string          `json:"projectId"`
	Kind          string          `json:"kind"`
	Title         string          `json:"title"`
	StartTime     *time.Time      `json:"startTime"`
	EndTime       *time.Time      `json:"endTime"`
	Score         float64         `json:"score"`
	Reviewed      bool            `json:"reviewed"`
	WinnerAssetID *uuid.UUID      `json:"winnerAssetId"`
	WhyWinner     []string        `json:"whyWinner"`
	Assets        json.RawMessage `json:"assets"`
	// ManualOverrides is the app's own record of a person's changes,
	// kept as sent (null when none).
	ManualOverrides json.RawMessage `json:"manualOverrides"`
}

func toClusterJSON(c store.Cluster) clusterJSON {
	var overrides json.RawMessage
	if c.Overrides != nil {
		overrides = *c.Overrides
	}
	return clusterJSON{ID: c.ID.String(), ProjectID: c.ProjectID.String(), Kind: c.Kind, Title: c.Title,
		StartTime: c.StartTime, EndTime: c.EndTime, Score: c.Score, Reviewed: c.Reviewed,
		WinnerAssetID: c.WinnerAssetID, WhyWinner: append([]string{}, c.WhyWinner...), Assets: c.Members,
		ManualOverrides: overrides}
}

var clusterKinds = map[string]bool{"": true, "moment": true, "burst": true, "duplicate_group": true}

func (s *Server) listClusters(c *gin.Context) {
	p, err := s.ownProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	kind := c.Query("kind")
	if !clusterKinds[kind] {
		fail(c, app.FieldErrors{"kind": "must be moment, burst or duplicate_group"}.Err())
		return
	}
	cur, limit, err := pageParams(c)
	if err != nil {
		fail(c, err)
		return
	}
	page, err := s.store.Clusters(c.Request.Context(), p.ID, kind, cur, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toPaged(page, toClusterJSON))
}

func (s *Server) getCluster(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	cl, err := s.store.Cluster(c.Request.Context(), principal(c).ID, id)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toClusterJSON(*cl))
}

// maxOverrides bounds manualOverrides: the app's notes on a group, not a
// document store.
const maxOverrides = 16 << 10

// patchCluster records a person's review of a group: a title, the
// reviewed mark, the app's overrides. They survive later cluster runs.
func (s *Server) patchCluster(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		Title           optional[string]          `json:"title"`
		Reviewed        optional[bool]            `json:"reviewed"`
		ManualOverrides optional[json.RawMessage] `json:"manualOverrides"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	var change store.ClusterChange
	// A null title or reviewed leaves it as it is (the KILO SDK sends
	// null for a field it does not change).
	if in.Title.Set && in.Title.Value != nil {
		checkTitle(errs, *in.Title.Value)
		t := strings.TrimSpace(*in.Title.Value)
		change.Title = &t
	}
	if in.Reviewed.Set {
		change.Reviewed = in.Reviewed.Value
	}
	if in.ManualOverrides.Set {
		raw := json.RawMessage("null")
		if in.ManualOverrides.Value != nil {
			raw = *in.ManualOverrides.Value
		}
		switch {
		case len(raw) > maxOverrides:
			errs.Add("manualOverrides", "must be at most 16 KiB of JSON")
		case raw[0] != '{' && string(raw) != "null":
			errs.Add("manualOverrides", "must be an object or null")
		default:
			checkJSONNumbers(errs, "manualOverrides", raw)
		}
		change.Overrides = &raw
	}
	if !in.Title.Set && !in.Reviewed.Set && !in.ManualOverrides.Set {
		errs.Add("(body)", "must set title, reviewed or manualOverrides")
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	cl, err := s.app.UpdateCluster(c.Request.Context(), principal(c).ID, id, change)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toClusterJSON(*cl))
}

// chooseClusterWinner makes one of a group's members its winner, as a
// person chose it; later cluster runs keep the choice while it is a member.
func (s *Server) chooseClusterWinner(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		WinnerAssetID uuid.UUID `json:"winnerAssetId"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	if in.WinnerAssetID == uuid.Nil {
		fail(c, app.FieldErrors{"winnerAssetId": "is required"}.Err())
		return
	}
	cl, err := s.app.ChooseClusterWinner(c.Request.Context(), principal(c).ID, id, in.WinnerAssetID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toClusterJSON(*cl))
}
