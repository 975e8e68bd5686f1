package server

import (
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"lightbox/app"
	"lightbox/store"
)

type projectJSON struct {
	ID string `json:"id"`
	// StudioID is always null: Lightbox has no studios, and the KILO SDK
	// reads the field.
	StudioID    *string            `json:"studioId"`
	OwnerUserID string             `json:"ownerUserId"`
	Title       string             `json:"title"`
	Description string             `json:"description"`
	ShootDate   *string            `json:"shootDate"`
	Timezone    *string            `json:"timezone"`
	Status      string             `json:"status"`
	DetectFaces bool               `json:"detectFaces"`
	Stats       store.ProjectStats `json:"stats"`
	CreatedAt   time.Time          `json:"createdAt"`
	UpdatedAt   time.Time          `json:"updatedAt"`
}

func toProjectJSON(p store.Project) projectJSON {
	out := projectJSON{
		ID: p.ID.String(), OwnerUserID: p.OwnerUserID.String(), Title: p.Title, Description: p.Description,
		Timezone: p.Timezone, Status: p.Status, DetectFaces: p.DetectFaces, Stats: p.ProjectStats,
		CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC(),
	}
	if p.ShootDate != nil {
		d := p.ShootDate.Format(time.DateOnly)
		out.ShootDate = &d
	}
	return out
}

const (
	maxTitleLen       = 200
	maxDescriptionLen = 5000
)

var projectStatuses = map[string]bool{"active": true, "archived": true, "deleted": true}

func checkTitle(errs app.FieldErrors, title string) {
	switch t := strings.TrimSpace(title); {
	case t == "":
		errs.Add("title", "is required")
	case utf8.RuneCountInString(t) > maxTitleLen:
		errs.Add("title", "must be at most 200 characters")
	}
}

func checkDescription(errs app.FieldErrors, d string) {
	if utf8.RuneCountInString(d) > maxDescriptionLen {
		errs.Add("description", "must be at most 5000 characters")
	}
}

func parseShootDate(errs app.FieldErrors, s *string) *time.Time {
	if s == nil {
		return nil
	}
	d, err := time.Parse(time.DateOnly, *s)
	if err != nil {
		errs.Add("shootDate", "must be a date like 2026-06-21")
		return nil
	}
	return &d
}

func checkTimezone(errs app.FieldErrors, tz *string) {
	if tz == nil {
		return
	}
	if _, err := time.LoadLocation(*tz); err != nil || *tz == "" || *tz == "Local" {
		errs.Add("timezone", "must be an IANA time zone such as Europe/Paris")
	}
}

func (s *Server) listProjects(c *gin.Context) {
	cur, limit, err := pageParams(c)
	if err != nil {
		fail(c, err)
		return
	}
	page, err := s.store.Projects(c.Request.Context(), principal(c).ID, cur, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toPaged(page, toProjectJSON))
}

func (s *Server) createProject(c *gin.Context) {
	var in struct {
		Title       string  `json:"title"`
		Description string  `json:"description"`
		ShootDate   *string `json:"shootDate"`
		Timezone    *string `json:"timezone"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	checkTitle(errs, in.Title)
	checkDescription(errs, in.Description)
	shoot := parseShootDate(errs, in.ShootDate)
	checkTimezone(errs, in.Timezone)
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	p, err := s.app.CreateProject(c.Request.Context(), principal(c).ID, strings.TrimSpace(in.Title), in.Description, shoot, in.Timezone)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, toProjectJSON(*p))
}

// ownProject loads the caller's project named by the path.
func (s *Server) ownProject(c *gin.Context) (*store.Project, error) { return owned(c, s.store.Project) }

func (s *Server) getProject(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	p, err := s.store.Project(c.Request.Context(), principal(c).ID, id)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toProjectJSON(*p))
}

func (s *Server) patchProject(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		Title       optional[string] `json:"title"`
		Description optional[string] `json:"description"`
		ShootDate   optional[string] `json:"shootDate"`
		Timezone    optional[string] `json:"timezone"`
		Status      optional[string] `json:"status"`
		DetectFaces optional[bool]   `json:"detectFaces"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	var upd store.ProjectInput
	if in.Title.Set {
		if in.Title.Value == nil {
			errs.Add("title", "cannot be null")
		} else {
			checkTitle(errs, *in.Title.Value)
			t := strings.TrimSpace(*in.Title.Value)
			upd.Title = &t
		}
	}
	if in.Description.Set {
		d := ""
		if in.Description.Value != nil {
			d = *in.Description.Value
		}
		checkDescription(errs, d)
		upd.Description = &d
	}
	if in.ShootDate.Set {
		shoot := parseShootDate(errs, in.ShootDate.Value)
		upd.ShootDate = &shoot
	}
	if in.Timezone.Set {
		checkTimezone(errs, in.Timezone.Value)
		upd.Timezone = &in.Timezone.Value
	}
	if in.Status.Set {
		if in.Status.Value == nil || !projectStatuses[*in.Status.Value] {
			errs.Add("status", "must be active, archived or deleted")
		}
		upd.Status = in.Status.Value
	}
	if in.DetectFaces.Set {
		if in.DetectFaces.Value == nil {
			errs.Add("detectFaces", "must be true or false")
		}
		upd.DetectFaces = in.DetectFaces.Value
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	p, err := app.UpdateProject(c.Request.Context(), s.store, principal(c).ID, id, upd)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toProjectJSON(*p))
}

func (s *Server) archiveProject(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	archived := "archived"
	p, err := app.UpdateProject(c.Request.Context(), s.store, principal(c).ID, id, store.ProjectInput{Status: &archived})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toProjectJSON(*p))
}
