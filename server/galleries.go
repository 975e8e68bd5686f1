package server

// Galleries, as their owners manage them (the public side is share.go):
//
//   - A gallery shows chosen photos of one project at /s/{slug}. A slug is
//     10 random characters of [a-z2-7] unless shareSlug gives one (3 to
//     64 of [a-z0-9-], unique across the service: 409 slug_taken).
//   - A password is stored as an argon2id hash and never shown; PATCH
//     password null removes it, and any change ends the viewer tokens given
//     before. Owners' passwords are hashed on slots of their own
//     (PASSWORD_OWNER_HASHES), never the viewers': one of a user's at a
//     time, users taking turns; four more of a user's wait in line, and a
//     request past those is 429 busy with Retry-After.
//   - With watermark on, each photo gets a watermarked preview from a
//     gallery:render job, in a batch of kind "gallery"; adding photos or
//     turning the watermark on starts one, and the answer names it as
//     renderBatchId. The previews show watermarkText, or the title when it
//     is null: never anything of the owner's account, once, in the corner
//     or the center (watermarkPosition) at watermarkOpacity. A change of
//     any of the three draws them all again.
//   - showFileNames lets clients see each photo's file name; without it
//     the page numbers them.

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/abuse/password"
	"lightbox/app"
	"lightbox/ptr"
	"lightbox/render"
	"lightbox/store"
)

// Gallery limits.
const (
	maxGalleryTitle = 200
	maxMarkText     = 100
	minPasswordLen  = 4
	maxPasswordLen  = 256
	// maxGalleryAssets is how many assets one request adds or removes.
	maxGalleryAssets = 10_000
)

var slugPattern = regexp.MustCompile(`^[a-z0-9-]{3,64}$`)

type galleryJSON struct {
	ID             uuid.UUID  `json:"id"`
	ProjectID      uuid.UUID  `json:"projectId"`
	Title          string     `json:"title"`
	ShareSlug      string     `json:"shareSlug"`
	ShareURL       string     `json:"shareUrl"`
	ExpiresAt      *time.Time `json:"expiresAt"`
	Watermark      bool       `json:"watermark"`
	WatermarkText  *string    `json:"watermarkText"`
	AllowDownloads bool       `json:"allowDownloads"`
	// SelectionLimit is how many photos one visitor may choose; null for
	// no limit.
	SelectionLimit    *int    `json:"selectionLimit"`
	ShowFileNames     bool    `json:"showFileNames"`
	WatermarkPosition string  `json:"watermarkPosition"`
	WatermarkOpacity  float64 `json:"watermarkOpacity"`
	// RequiresPassword is what the public answer calls requiresAuth: the
	// KILO SDK (seed 002) names the two sides differently.
	RequiresPassword bool `json:"requiresPassword"`
	AssetCount       int  `json:"assetCount"`
	// FavoriteCount and CommentsCount are what viewers left, named as the
	// public answer names them per photo.
	FavoriteCount int       `json:"favoriteCount"`
	CommentsCount int       `json:"commentsCount"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	// RenderBatchID is the batch of watermark renders the request started.
	RenderBatchID *uuid.UUID `json:"renderBatchId,omitempty"`
}

func (s *Server) toGalleryJSON(g *store.Gallery) galleryJSON {
	return galleryJSON{ID: g.ID, ProjectID: g.ProjectID, Title: g.Title, ShareSlug: g.Slug,
		ShareURL: strings.TrimRight(s.cfg.PublicURL, "/") + "/s/" + g.Slug, RequiresPassword: g.PasswordHash != nil,
		Watermark: g.Watermark, WatermarkText: g.WatermarkText, AllowDownloads: g.AllowDownloads, SelectionLimit: g.SelectionLimit,
		ShowFileNames: g.ShowFileNames, WatermarkPosition: g.WatermarkPosition, WatermarkOpacity: g.WatermarkOpacity,
		AssetCount:    g.AssetCount,
		FavoriteCount: g.FavoriteCount, CommentsCount: g.CommentsCount,
		CreatedAt: g.CreatedAt.UTC(), UpdatedAt: g.UpdatedAt.UTC(), ExpiresAt: utcPtr(g.ExpiresAt)}
}

// answerGalleryChange answers with the changed gallery and the batch of
// renders the change started.
func (s *Server) answerGalleryChange(c *gin.Context, status int, ch *store.GalleryChange) {
	out := s.toGalleryJSON(ch.Gallery)
	out.RenderBatchID = ch.BatchID
	c.JSON(status, out)
}

func (s *Server) ownGallery(c *gin.Context) (*store.Gallery, error) { return owned(c, s.store.Gallery) }

func (s *Server) createGallery(c *gin.Context) {
	ctx := c.Request.Context()
	p, err := s.ownProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		Title          string     `json:"title"`
		ShareSlug      *string    `json:"shareSlug"`
		Password       *string    `json:"password"`
		ExpiresAt      *time.Time `json:"expiresAt"`
		Watermark      bool       `json:"watermark"`
		WatermarkText  *string    `json:"watermarkText"`
		AllowDownloads bool       `json:"allowDownloads"`
		SelectionLimit *int       `json:"selectionLimit"`
		ShowFileNames  bool       `json:"showFileNames"`
		// Null or left out: the defaults.
		WatermarkPosition *string  `json:"watermarkPosition"`
		WatermarkOpacity  *float64 `json:"watermarkOpacity"`
		AssetIDs          []string `json:"assetIds"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	checkGalleryTitle(errs, in.Title)
	if in.ShareSlug != nil && !slugPattern.MatchString(*in.ShareSlug) {
		errs.Add("shareSlug", "must be 3 to 64 characters of a-z, 0-9 and -")
	}
	checkPassword(errs, in.Password)
	checkExpiry(errs, in.ExpiresAt)
	checkMarkText(errs, in.WatermarkText)
	checkSelectionLimit(errs, in.SelectionLimit)
	checkMarkPosition(errs, in.WatermarkPosition)
	checkMarkOpacity(errs, in.WatermarkOpacity)
	ids := parseAssetIDs(errs, in.AssetIDs, maxGalleryAssets)
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	if err := s.checkProjectAssets(ctx, p.ID, ids); err != nil {
		fail(c, err)
		return
	}
	// No slug: the use case makes one.
	g := &store.Gallery{ID: uuid.New(), ProjectID: p.ID, Title: in.Title, Slug: ptr.Value(in.ShareSlug), ExpiresAt: in.ExpiresAt,
		Watermark: in.Watermark, WatermarkText: in.WatermarkText, AllowDownloads: in.AllowDownloads, SelectionLimit: in.SelectionLimit,
		ShowFileNames: in.ShowFileNames, WatermarkPosition: ptr.Value(in.WatermarkPosition), WatermarkOpacity: ptr.Value(in.WatermarkOpacity)}
	if g.PasswordHash, err = s.hashPassword(c, in.Password); err != nil {
		fail(c, err)
		return
	}
	ch, err := s.app.CreateGallery(ctx, logger(c), g, ids)
	if errors.Is(err, store.ErrSlugTaken) {
		err = apiError(http.StatusConflict, "slug_taken", "Another gallery has the slug %q; choose another.", g.Slug)
	}
	if err != nil {
		fail(c, err)
		return
	}
	s.answerGalleryChange(c, http.StatusCreated, ch)
}

func (s *Server) getGallery(c *gin.Context) {
	g, err := s.ownGallery(c)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.toGalleryJSON(g))
}

func (s *Server) patchGallery(c *gin.Context) {
	g, err := s.ownGallery(c)
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		Title          optional[string]    `json:"title"`
		Password       optional[string]    `json:"password"`
		ExpiresAt      optional[time.Time] `json:"expiresAt"`
		Watermark      optional[bool]      `json:"watermark"`
		WatermarkText  optional[string]    `json:"watermarkText"`
		AllowDownloads optional[bool]      `json:"allowDownloads"`
		SelectionLimit optional[int]       `json:"selectionLimit"`
		ShowFileNames  optional[bool]      `json:"showFileNames"`
		// Null is no position or opacity: refused.
		WatermarkPosition optional[string]  `json:"watermarkPosition"`
		WatermarkOpacity  optional[float64] `json:"watermarkOpacity"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	var patch store.GalleryInput
	if in.Title.Set {
		if in.Title.Value == nil {
			errs.Add("title", "must be a string")
		} else {
			checkGalleryTitle(errs, *in.Title.Value)
			patch.Title = in.Title.Value
		}
	}
	for name, f := range map[string]struct {
		in  optional[bool]
		out **bool
	}{"watermark": {in.Watermark, &patch.Watermark}, "allowDownloads": {in.AllowDownloads, &patch.AllowDownloads},
		"showFileNames": {in.ShowFileNames, &patch.ShowFileNames}} {
		if f.in.Set && f.in.Value == nil {
			errs.Add(name, "must be true or false")
		}
		*f.out = f.in.Value
	}
	if in.ExpiresAt.Set {
		checkExpiry(errs, in.ExpiresAt.Value)
		patch.ExpiresAt = &in.ExpiresAt.Value
	}
	if in.Password.Set {
		checkPassword(errs, in.Password.Value)
	}
	if in.WatermarkText.Set {
		checkMarkText(errs, in.WatermarkText.Value)
		patch.WatermarkText = &in.WatermarkText.Value
	}
	if in.SelectionLimit.Set {
		checkSelectionLimit(errs, in.SelectionLimit.Value)
		patch.SelectionLimit = &in.SelectionLimit.Value
	}
	if in.WatermarkPosition.Set {
		if in.WatermarkPosition.Value == nil {
			errs.Add("watermarkPosition", markPositionProblem)
		}
		checkMarkPosition(errs, in.WatermarkPosition.Value)
		patch.WatermarkPosition = in.WatermarkPosition.Value
	}
	if in.WatermarkOpacity.Set {
		if in.WatermarkOpacity.Value == nil {
			errs.Add("watermarkOpacity", markOpacityProblem)
		}
		checkMarkOpacity(errs, in.WatermarkOpacity.Value)
		patch.WatermarkOpacity = in.WatermarkOpacity.Value
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	if in.Password.Set {
		hash, err := s.hashPassword(c, in.Password.Value)
		if err != nil {
			fail(c, err)
			return
		}
		patch.PasswordHash = &hash
	}
	ch, err := s.app.UpdateGallery(c.Request.Context(), logger(c), principal(c).ID, g.ID, patch)
	if err != nil {
		fail(c, err)
		return
	}
	s.answerGalleryChange(c, http.StatusOK, ch)
}

// galleryAssets loads the caller's gallery and reads {assetIds} for
// adding or removing photos: each an asset of the gallery's project.
func (s *Server) galleryAssets(c *gin.Context) (*store.Gallery, []uuid.UUID, error) {
	g, err := s.ownGallery(c)
	if err != nil {
		return nil, nil, err
	}
	var in struct {
		AssetIDs []string `json:"assetIds"`
	}
	if err := decodeJSON(c, &in); err != nil {
		return nil, nil, err
	}
	errs := app.FieldErrors{}
	if len(in.AssetIDs) == 0 {
		errs.Add("assetIds", "must list at least one asset")
	}
	ids := parseAssetIDs(errs, in.AssetIDs, maxGalleryAssets)
	if err := errs.Err(); err != nil {
		return nil, nil, err
	}
	return g, ids, s.checkProjectAssets(c.Request.Context(), g.ProjectID, ids)
}

func (s *Server) addGalleryAssets(c *gin.Context) {
	g, ids, err := s.galleryAssets(c)
	if err != nil {
		fail(c, err)
		return
	}
	ch, err := s.app.AddGalleryAssets(c.Request.Context(), logger(c), g.ID, ids)
	if err != nil {
		fail(c, err)
		return
	}
	s.answerGalleryChange(c, http.StatusOK, ch)
}

func (s *Server) removeGalleryAssets(c *gin.Context) {
	g, ids, err := s.galleryAssets(c)
	if err != nil {
		fail(c, err)
		return
	}
	if g, err = s.app.RemoveGalleryAssets(c.Request.Context(), logger(c), g, ids); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.toGalleryJSON(g))
}

// listGalleries lists a project's galleries, newest first.
func (s *Server) listGalleries(c *gin.Context) {
	p, err := s.ownProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	cur, limit, err := pageParams(c)
	if err != nil {
		fail(c, err)
		return
	}
	page, err := s.store.Galleries(c.Request.Context(), p.ID, cur, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toPaged(page, func(g store.Gallery) galleryJSON { return s.toGalleryJSON(&g) }))
}

// deleteGallery ends a gallery: its link answers 404 from now on
// (app.DeleteGallery).
func (s *Server) deleteGallery(c *gin.Context) {
	g, err := s.ownGallery(c)
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.app.DeleteGallery(c.Request.Context(), logger(c), g); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

type commentJSON struct {
	ID        uuid.UUID `json:"id"`
	AssetID   uuid.UUID `json:"assetId"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"createdAt"`
}

func toCommentJSON(cm store.Comment) commentJSON {
	return commentJSON{ID: cm.ID, AssetID: cm.AssetID, Text: cm.Body, CreatedAt: cm.CreatedAt.UTC()}
}

// galleryComments lists what viewers wrote, oldest first, a page at a
// time, for the owner.
func (s *Server) galleryComments(c *gin.Context) {
	g, err := s.ownGallery(c)
	if err != nil {
		fail(c, err)
		return
	}
	cur, limit, err := pageParams(c)
	if err != nil {
		fail(c, err)
		return
	}
	page, err := s.store.GalleryComments(c.Request.Context(), g.ID, cur, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toPaged(page, toCommentJSON))
}

func checkGalleryTitle(errs app.FieldErrors, title string) {
	if n := utf8.RuneCountInString(strings.TrimSpace(title)); n == 0 || n > maxGalleryTitle {
		errs.Add("title", "must be 1 to 200 characters")
	}
}

// checkMarkText checks the text drawn across watermarked previews: a line
// of 1 to 100 characters, or null for the title.
func checkMarkText(errs app.FieldErrors, text *string) {
	if text == nil {
		return
	}
	n := utf8.RuneCountInString(strings.TrimSpace(*text))
	if n == 0 || n > maxMarkText || strings.ContainsFunc(*text, unicode.IsControl) {
		errs.Add("watermarkText", "must be one line of 1 to 100 characters, or null for the title")
	}
}

// The watermark's opacities: below the least it cannot be seen.
const minMarkOpacity, maxMarkOpacity = 0.05, 1.0

const (
	markPositionProblem = `must be "corner" or "center"`
	markOpacityProblem  = "must be a number from 0.05 to 1"
)

// checkMarkPosition checks where the watermark goes, when given.
func checkMarkPosition(errs app.FieldErrors, pos *string) {
	if pos != nil && *pos != render.MarkCorner && *pos != render.MarkCenter {
		errs.Add("watermarkPosition", markPositionProblem)
	}
}

// checkMarkOpacity checks the watermark's opacity, when given.
func checkMarkOpacity(errs app.FieldErrors, o *float64) {
	if o != nil && !(*o >= minMarkOpacity && *o <= maxMarkOpacity) {
		errs.Add("watermarkOpacity", markOpacityProblem)
	}
}

func checkPassword(errs app.FieldErrors, pw *string) {
	if pw != nil && (len(*pw) < minPasswordLen || len(*pw) > maxPasswordLen) {
		errs.Add("password", "must be 4 to 256 bytes, or null for none")
	}
}

func checkExpiry(errs app.FieldErrors, at *time.Time) {
	if at != nil && !at.After(time.Now()) {
		errs.Add("expiresAt", "must be in the future, or null for never")
	}
	checkOffset(errs, "expiresAt", at)
}

// ownerHashes is how owners share their hash slots: one hash of a user's
// runs at a time, so that a user setting passwords in a loop takes one
// slot, and four more of theirs wait in line; users take turns.
func ownerHashes(slots int) password.Limits {
	return password.Limits{Slots: slots, PerKey: 1, KeyWaiting: 4, Waiting: 16 * slots}
}

// hashPassword is the stored form of a gallery password; nil for none.
func (s *Server) hashPassword(c *gin.Context, pw *string) (*string, error) {
	if pw == nil {
		return nil, nil
	}
	h, err := s.ownerHashes.Hash(c.Request.Context(), principal(c).ID.String(), *pw)
	if err != nil {
		return nil, s.hashFailed(c, err)
	}
	return &h, nil
}

// hashFailed is the answer to a password hash that could not run: a 429
// when the line for a slot is full. A hash takes a fraction of a second,
// so a second later there is likely room. A caller who left the line
// hears the same, if anything.
func (s *Server) hashFailed(c *gin.Context, err error) error {
	if errors.Is(err, password.ErrBusy) || c.Request.Context().Err() != nil {
		return retryLater(c, time.Second, "busy", "The server is checking other passwords")
	}
	return err
}

// maxSelectionLimit bounds a gallery's selection limit: more photos than
// a gallery may hold is no limit.
const maxSelectionLimit = maxGalleryAssets

func checkSelectionLimit(errs app.FieldErrors, limit *int) {
	if limit != nil && (*limit < 1 || *limit > maxSelectionLimit) {
		errs.Add("selectionLimit", fmt.Sprintf("must be a whole number from 1 to %d, or null for no limit", maxSelectionLimit))
	}
}

type visitorChoiceJSON struct {
	Name      *string     `json:"name"` // null for a viewer who gave none
	Email     *string     `json:"email"`
	AssetIDs  []uuid.UUID `json:"assetIds"`
	FileNames []string    `json:"fileNames"`
}

// galleryFavorites tells the owner who chose what: each visitor once,
// whichever of their browsers they chose in, with their photos in the
// gallery's order.
func (s *Server) galleryFavorites(c *gin.Context) {
	g, err := s.ownGallery(c)
	if err != nil {
		fail(c, err)
		return
	}
	choices, err := s.store.GalleryFavorites(c.Request.Context(), g.ID)
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]visitorChoiceJSON, len(choices))
	for i, v := range choices {
		out[i] = visitorChoiceJSON{Name: v.Name, Email: v.Email, AssetIDs: v.AssetIDs, FileNames: v.FileNames}
	}
	c.JSON(http.StatusOK, gin.H{"visitors": out})
}
