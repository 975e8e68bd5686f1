package server

// The public side of galleries, for the clients who view them:
//
//   - No API key. Every call spends from a budget per client address, and
//     an unknown slug is 404 (so is a gallery of a deleted project), an
//     expired gallery 410 gallery_expired.
//   - A viewer token (POST /v1/share/{slug}/auth) reaches one gallery for
//     24 hours, sent as "Authorization: Bearer <token>"; a token of another
//     gallery, an expired one or one given before the password changed is
//     401 invalid_viewer_token. A gallery without a password gives a token
//     for any password, or none, and its GET gives one to a caller that
//     sent none: favourites and comments need one, so each viewer
//     favourites a photo once.
//   - Passwords tried are counted before they are checked, in one Redis
//     step (abuse/guess). Ten wrong ones for one gallery from one
//     address lock that address out of the gallery for 15 minutes (429
//     too_many_attempts): the tenth answers 429, and so does the right
//     password until then, without a hash. A gallery tried 30 times in an
//     hour from anywhere hands out turns: each address waits for its own
//     (429 slow_down with Retry-After), turns come a second apart, twice
//     as far every ten tries, up to a minute. Its client is slowed, never
//     locked out.
//   - A password is checked on one of a few hash slots (PASSWORD_HASHES),
//     which owners setting passwords never take. A try finding them all
//     busy waits in line, galleries taking turns: one try of a gallery
//     waits at a time, eight a slot in all, so a flooded gallery puts at
//     most one of its tries ahead of another's viewer, besides those
//     running. A try past those is 429 busy at once.
//   - What viewers leave is capped. A gallery gives at most 30 viewer
//     tokens an hour to one address (429 rate_limited) and has at most
//     1,000 live viewers (429 gallery_viewer_limit, until the oldest
//     expires). A viewer writes at most 50 comments (403
//     viewer_comment_limit), an address 60 an hour to one gallery (429
//     rate_limited), and a gallery holds at most 5,000 (403
//     gallery_comment_limit). The owner reads them a page at a time.
//   - Preview and original links are signed blob URLs; a watermarked
//     gallery shows only watermarked previews, and marks a photo whose
//     preview is not made yet as pending, with a placeholder's link.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/abuse/guess"
	"lightbox/abuse/password"
	"lightbox/app"
	"lightbox/blob"
	"lightbox/ptr"
	"lightbox/store"
)

// Public gallery limits.
const (
	maxNameLen    = 100
	maxCommentLen = 2000
)

// shareGuessLimits are the rules of gallery passwords tried.
var shareGuessLimits = guess.TurnLimits{
	PerAddress: 10, AddressWindow: 15 * time.Minute,
	Free: 30, TargetWindow: time.Hour, Delay: time.Second, Step: 10, MaxDelay: time.Minute,
}

// viewerHashes is how viewers' tries share the hash slots: one try of a
// gallery waits for a slot at a time, and eight a slot in all, some three
// seconds of hashes.
func viewerHashes(slots int) password.Limits {
	return password.Limits{Slots: slots, KeyWaiting: 1, Waiting: 8 * slots}
}

// sharePerIP is the budget of the public gallery routes per client address.
var sharePerIP = perMinute(300, 100)

// Caps on what an address leaves behind (see the top of the file); the
// gallery's own caps are app's.
var (
	viewersPerAddress  = perPeriod(30, time.Hour)
	commentsPerAddress = perPeriod(60, time.Hour)
)

// Context keys of the share routes.
const (
	ctxGallery = "gallery"
	ctxViewer  = "viewer"
)

// loadShare limits the caller, then loads the gallery of the path's slug
// and the viewer its token names, if any.
func (s *Server) loadShare(c *gin.Context) {
	if !s.allow(c, "share-ip:"+c.ClientIP(), sharePerIP, 1) {
		return
	}
	ctx := c.Request.Context()
	g, err := s.store.GalleryBySlug(ctx, c.Param("slug"))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = apiError(http.StatusNotFound, "not_found", "No gallery has this address.")
		}
		fail(c, err)
		return
	}
	if g.Expired(time.Now()) {
		fail(c, apiError(http.StatusGone, "gallery_expired", "This gallery has expired."))
		return
	}
	c.Set(ctxGallery, g)
	if h := c.GetHeader("Authorization"); h != "" {
		token, ok := bearerToken(h)
		var v *store.Viewer
		if ok {
			v, err = s.store.ViewerByToken(ctx, g, store.HashSecret(token))
		}
		if !ok || errors.Is(err, store.ErrNotFound) {
			fail(c, apiError(http.StatusUnauthorized, "invalid_viewer_token",
				"The viewer token is not one for this gallery, or it has expired; enter the password again."))
			return
		}
		if err != nil {
			fail(c, err)
			return
		}
		c.Set(ctxViewer, v)
	}
	c.Next()
}

func shareGallery(c *gin.Context) *store.Gallery { return c.MustGet(ctxGallery).(*store.Gallery) }

// shareViewer is the caller's viewer, or nil when no token was sent.
func shareViewer(c *gin.Context) *store.Viewer {
	v, _ := c.Get(ctxViewer)
	viewer, _ := v.(*store.Viewer)
	return viewer
}

type shareAssetJSON struct {
	AssetID uuid.UUID `json:"assetId"`
	// PreviewURL shows a placeholder while pending: the KILO SDK reads it
	// as a string that is always there.
	PreviewURL    string  `json:"previewUrl"`
	Pending       bool    `json:"pending"`
	FavoriteCount int     `json:"favoriteCount"`
	CommentsCount int     `json:"commentsCount"`
	Favorited     bool    `json:"favorited"` // by this viewer
	OriginalURL   *string `json:"originalUrl,omitempty"`
	// FileName is there when the gallery shows file names.
	FileName *string `json:"fileName,omitempty"`
	// Width and Height are the preview's, for a page to lay the photos out
	// in their own shape before they arrive; null until ingest made it.
	Width  *int `json:"width"`
	Height *int `json:"height"`
}

type shareJSON struct {
	Title        string `json:"title"`
	RequiresAuth bool   `json:"requiresAuth"`
	// Token is a new viewer token, given with the photos of a gallery
	// without a password to a caller who sent none, so that it can
	// favourite and comment at once.
	Token          string     `json:"token,omitempty"`
	ExpiresAt      *time.Time `json:"expiresAt"`
	AllowDownloads bool       `json:"allowDownloads"`
	ShowFileNames  bool       `json:"showFileNames"`
	// SelectionLimit is how many photos one visitor may choose (null: no
	// limit); Chosen how many the caller's visitor has.
	SelectionLimit *int `json:"selectionLimit"`
	Chosen         int  `json:"chosen"`
	// Visitor is who the caller's token says they are, null for an
	// anonymous one: the page asks once per gallery.
	Visitor *visitorJSON `json:"visitor"`
	// Left out until the viewer may see the photos; an empty gallery
	// lists none rather than leaving the key out.
	Assets *[]shareAssetJSON `json:"assets,omitempty"`
}

type visitorJSON struct {
	Name  string  `json:"name"`
	Email *string `json:"email"`
}

func toVisitorJSON(v *store.Viewer) *visitorJSON {
	if v == nil || v.Name == nil {
		return nil
	}
	return &visitorJSON{Name: *v.Name, Email: v.Email}
}

func (s *Server) getShare(c *gin.Context) {
	ctx := c.Request.Context()
	g, v := shareGallery(c), shareViewer(c)
	out := shareJSON{Title: g.Title, RequiresAuth: g.PasswordHash != nil, ExpiresAt: utcPtr(g.ExpiresAt), AllowDownloads: g.AllowDownloads,
		ShowFileNames: g.ShowFileNames, SelectionLimit: g.SelectionLimit, Visitor: toVisitorJSON(v)}
	if g.PasswordHash != nil && v == nil {
		c.JSON(http.StatusOK, out)
		return
	}
	if v == nil {
		token, nv, err := s.newViewer(c, g)
		var refused *Error
		switch {
		case errors.As(err, &refused) && refused.Status == http.StatusTooManyRequests:
			// Past the viewer caps the photos are still shown, without a
			// token: only favourites and comments need one.
			c.Writer.Header().Del("Retry-After")
		case err != nil:
			fail(c, err)
			return
		default:
			v, out.Token = nv, token
		}
	}
	var viewer *uuid.UUID
	if v != nil {
		viewer = &v.ID
	}
	items, err := s.store.GalleryItems(ctx, g.ID, viewer)
	if err != nil {
		fail(c, err)
		return
	}
	assets := make([]shareAssetJSON, len(items))
	out.Assets = &assets
	for i, it := range items {
		a := shareAssetJSON{AssetID: it.AssetID, FavoriteCount: it.Favorites, CommentsCount: it.Comments, Favorited: it.Favorited,
			Width: it.Width, Height: it.Height}
		if g.ShowFileNames {
			a.FileName = &it.FileName
		}
		if it.Favorited {
			out.Chosen++
		}
		var preview *string
		switch {
		case g.Watermark && it.WatermarkKey != nil:
			preview = s.signShareURL(ctx, *it.WatermarkKey, "image/jpeg")
		case !g.Watermark && it.Edited:
			preview = s.signShareURL(ctx, blob.DerivedKey(it.AssetID, blob.KindEditPreview), "image/jpeg")
		case !g.Watermark && stageRank[it.Status] >= 1:
			preview = s.signShareURL(ctx, blob.DerivedKey(it.AssetID, blob.KindPreview), "image/jpeg")
		}
		a.Pending = preview == nil
		a.PreviewURL = cmp.Or(ptr.Value(preview), strings.TrimRight(s.cfg.PublicURL, "/")+"/static/pending.svg")
		if g.AllowDownloads && it.Status != store.AssetPendingUpload {
			a.OriginalURL = s.signShareURL(ctx, it.BlobKey, it.ContentType)
		}
		assets[i] = a
	}
	c.JSON(http.StatusOK, out)
}

// signShareURL is a signed GET link to key, nil when it cannot be made.
// Expiry on a minute boundary: the same link for a minute lets browsers
// cache the image.
func (s *Server) signShareURL(ctx context.Context, key, contentType string) *string {
	u, err := s.signer.SignGet(ctx, blob.Grant{Key: key, ContentType: contentType,
		Expires: time.Now().Add(downloadTTL).Truncate(time.Minute).Add(time.Minute)})
	if err != nil {
		s.log.WarnContext(ctx, "sign gallery url", "key", key, "err", err)
		return nil
	}
	return &u.URL
}

// shareAuth gives a viewer token for the right password. A visitor who
// gives their name (and, if they like, their email) gets a token that
// lasts visitorTTL and makes their favourites theirs: the same name, or
// the same email, from another browser later is the same chooser. Without
// a name the token is anonymous, as seed 002's app asks for one.
func (s *Server) shareAuth(c *gin.Context) {
	g := shareGallery(c)
	var in struct {
		Password string  `json:"password"`
		Name     *string `json:"name"`
		Email    *string `json:"email"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	who, err := checkVisitor(in.Name, in.Email)
	if err != nil {
		fail(c, err)
		return
	}
	if g.PasswordHash != nil {
		if err := s.checkSharePassword(c, g, in.Password); err != nil {
			fail(c, err)
			return
		}
	}
	token, v, err := s.newVisitor(c, g, who)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"token": token, "expiresAt": v.ExpiresAt.UTC(), "visitor": toVisitorJSON(v)})
}

// checkVisitor reads who a visitor says they are: nil without a name.
func checkVisitor(name, email *string) (*store.Visitor, error) {
	errs := app.FieldErrors{}
	ok := func(v string, most int) bool {
		return v != "" && utf8.RuneCountInString(v) <= most && !strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f })
	}
	if name != nil && !ok(strings.TrimSpace(*name), maxNameLen) {
		errs.Add("name", fmt.Sprintf("must be 1 to %d characters on one line", maxNameLen))
	}
	if email != nil && *email != "" {
		e := strings.TrimSpace(*email)
		at := strings.LastIndexByte(e, '@')
		if !ok(e, maxEmailLen) || at < 1 || at == len(e)-1 || strings.ContainsAny(e, " ,;<>") {
			errs.Add("email", "must be an email address, or left out")
		}
		if name == nil {
			errs.Add("name", "must be given with an email")
		}
	}
	if err := errs.Err(); err != nil || name == nil {
		return nil, err
	}
	who := &store.Visitor{Name: strings.TrimSpace(*name)}
	if email != nil {
		who.Email = strings.TrimSpace(*email)
	}
	return who, nil
}

// newViewer records a viewer of g for the caller and returns its token,
// within the caps: tokens an address gets from the gallery, and the
// gallery's live viewers (both 429).
func (s *Server) newViewer(c *gin.Context, g *store.Gallery) (string, *store.Viewer, error) {
	return s.newVisitor(c, g, nil)
}

// newVisitor is newViewer for a visitor who named themself (who), or an
// anonymous viewer (nil).
func (s *Server) newVisitor(c *gin.Context, g *store.Gallery, who *store.Visitor) (string, *store.Viewer, error) {
	if err := s.spendAlso(c, "share-viewers:"+g.ID.String()+":"+c.ClientIP(), viewersPerAddress); err != nil {
		return "", nil, err
	}
	token, v, err := s.app.JoinGallery(c.Request.Context(), g, who)
	var full *store.ViewerLimitError
	if errors.As(err, &full) {
		return "", nil, retryLater(c, time.Until(full.FreeAt), "gallery_viewer_limit", "This gallery has as many viewers as it takes")
	}
	return token, v, err
}

// checkSharePassword counts the try, then checks it on a hash slot: nil
// when it is g's password.
func (s *Server) checkSharePassword(c *gin.Context, g *store.Gallery, pw string) error {
	ctx := c.Request.Context()
	gallery, addr := g.ID.String(), c.ClientIP()
	v, err := s.shareGuesses.Take(ctx, gallery, addr)
	switch {
	case err != nil:
		// An uncounted try is what the count is for: none is checked.
		logger(c).Error("count a gallery password", "err", err)
		return apiError(http.StatusServiceUnavailable, "password_check_unavailable",
			"Passwords cannot be checked right now; retry shortly.")
	case v.Locked:
		return retryLater(c, v.Wait, "too_many_attempts", "Too many wrong passwords from this address")
	case !v.Allowed:
		return retryLater(c, v.Wait, "slow_down", "This gallery has had many wrong passwords, so each address takes its turn; yours comes")
	}
	ok, err := s.viewerHashes.Verify(ctx, gallery, *g.PasswordHash, pw)
	// The count is kept even if the client hangs up meanwhile.
	ctx = context.WithoutCancel(ctx)
	if err != nil {
		if err := s.shareGuesses.Unchecked(ctx, gallery, addr); err != nil {
			logger(c).Warn("give back a password try", "err", err)
		}
		return s.hashFailed(c, err)
	}
	if ok {
		if err := s.shareGuesses.Forgive(ctx, gallery, addr); err != nil {
			logger(c).Warn("clear the password tries", "err", err)
		}
		return nil
	}
	if v.Left == 0 {
		return retryLater(c, shareGuessLimits.AddressWindow, "too_many_attempts", "Too many wrong passwords from this address")
	}
	return apiError(http.StatusUnauthorized, "wrong_password", "The password is wrong.")
}

// viewerRequest reads the body of a viewer's request about one photo:
// the viewer (401 without a token) and the photo's id.
func viewerRequest(c *gin.Context, in any, assetID *string) (*store.Viewer, uuid.UUID, error) {
	v := shareViewer(c)
	if v == nil {
		return nil, uuid.Nil, apiError(http.StatusUnauthorized, "viewer_token_required",
			"Get a viewer token from POST /v1/share/{slug}/auth and send it as 'Authorization: Bearer <token>'.")
	}
	if err := decodeJSON(c, in); err != nil {
		return nil, uuid.Nil, err
	}
	id, err := uuid.Parse(*assetID)
	if err != nil {
		return nil, uuid.Nil, apiError(http.StatusBadRequest, "validation_failed", "assetId must be an asset id (a UUID).").
			with("fields", map[string]string{"assetId": "must be an asset id (a UUID)"})
	}
	return v, id, nil
}

// notInGallery is the answer for a photo the gallery does not show.
func notInGallery(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return apiError(http.StatusNotFound, "not_found", "The photo is not in this gallery.")
	}
	return err
}

func (s *Server) shareFavorite(c *gin.Context) {
	var in struct {
		AssetID  string `json:"assetId"`
		Favorite *bool  `json:"favorite"`
	}
	v, asset, err := viewerRequest(c, &in, &in.AssetID)
	if err == nil && in.Favorite == nil {
		err = apiError(http.StatusBadRequest, "validation_failed", "favorite must be true or false.").
			with("fields", map[string]string{"favorite": "must be true or false"})
	}
	if err != nil {
		fail(c, err)
		return
	}
	g := shareGallery(c)
	n, chosen, err := s.app.Favorite(c.Request.Context(), logger(c), g, v, asset, *in.Favorite)
	if errors.Is(err, store.ErrSelectionLimit) {
		limit := *g.SelectionLimit
		fail(c, apiError(http.StatusConflict, "selection_limit",
			"You have chosen %d photos, as many as this gallery takes; unmark one to choose another.", limit).
			with("selectionLimit", limit))
		return
	}
	if err != nil {
		fail(c, notInGallery(err))
		return
	}
	c.JSON(http.StatusOK, gin.H{"ok": true, "assetId": asset, "favorite": *in.Favorite, "favoriteCount": n, "chosen": chosen})
}

func (s *Server) shareComment(c *gin.Context) {
	var in struct {
		AssetID string `json:"assetId"`
		Text    string `json:"text"`
	}
	v, asset, err := viewerRequest(c, &in, &in.AssetID)
	if err == nil && (strings.TrimSpace(in.Text) == "" || utf8.RuneCountInString(in.Text) > maxCommentLen) {
		err = apiError(http.StatusBadRequest, "validation_failed", "text must be 1 to %d characters.", maxCommentLen).
			with("fields", map[string]string{"text": fmt.Sprintf("must be 1 to %d characters", maxCommentLen)})
	}
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.spendAlso(c, "share-comments:"+v.GalleryID.String()+":"+c.ClientIP(), commentsPerAddress); err != nil {
		fail(c, err)
		return
	}
	cm, n, err := s.app.Comment(c.Request.Context(), logger(c), shareGallery(c), v, asset, in.Text)
	switch {
	case errors.Is(err, store.ErrViewerComments):
		err = apiError(http.StatusForbidden, "viewer_comment_limit", "This viewer has written %d comments, the most one may.", app.CommentCaps.PerViewer)
	case errors.Is(err, store.ErrGalleryComments):
		err = apiError(http.StatusForbidden, "gallery_comment_limit", "This gallery holds %d comments, the most it takes.", app.CommentCaps.PerGallery)
	}
	if err != nil {
		fail(c, notInGallery(err))
		return
	}
	c.JSON(http.StatusCreated, gin.H{"commentId": cm.ID, "comment": toCommentJSON(*cm), "commentsCount": n})
}

// sharePage serves the gallery page; what it shows comes from the share
// routes.
func (s *Server) sharePage(c *gin.Context) { s.servePage(c, "share.html") }
