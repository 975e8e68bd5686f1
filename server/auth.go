package server

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/store"
)

const sessionCookie = "lightbox_session"

// authenticate resolves the caller from a Bearer key or the session cookie.
func (s *Server) authenticate(c *gin.Context) {
	p, err := s.principalFrom(c)
	if err == nil && c.GetHeader("Authorization") == "" && s.crossOrigin(c.Request) {
		err = errCrossOrigin() // a cookie another site's page made the browser send
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.Set(ctxPrincipal, p)
	c.Next()
}

// bearerToken is the credential of an Authorization header of the Bearer
// scheme, whose name is case-insensitive (RFC 9110).
func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

func (s *Server) principalFrom(c *gin.Context) (*store.Principal, error) {
	if h := c.GetHeader("Authorization"); h != "" {
		key, ok := bearerToken(h)
		if !ok || key == "" {
			return nil, s.failedCredential(c, apiError(http.StatusUnauthorized, "invalid_credentials", "The Authorization header must be 'Bearer <api key>'."))
		}
		if strings.HasPrefix(key, store.AccessPrefix) {
			p, err := s.store.PrincipalBySession(c.Request.Context(), key)
			if errors.Is(err, store.ErrNotFound) {
				return nil, apiError(http.StatusUnauthorized, "token_expired", "The access token has expired or was revoked; refresh it.")
			}
			return p, err
		}
		p, err := s.store.PrincipalByAPIKey(c.Request.Context(), key)
		if errors.Is(err, store.ErrNotFound) {
			return nil, s.failedCredential(c, apiError(http.StatusUnauthorized, "invalid_credentials", "The API key is unknown or revoked."))
		}
		return p, err
	}
	if token, err := c.Cookie(sessionCookie); err == nil && token != "" {
		p, err := s.store.PrincipalBySession(c.Request.Context(), token)
		if errors.Is(err, store.ErrNotFound) {
			return nil, apiError(http.StatusUnauthorized, "session_expired", "The session has ended; sign in again.")
		}
		return p, err
	}
	return nil, errUnauthenticated()
}

func principal(c *gin.Context) *store.Principal {
	if p, ok := c.Get(ctxPrincipal); ok {
		return p.(*store.Principal)
	}
	return nil
}

// requireAdmin lets only admins through. Others learn nothing of the route.
func requireAdmin(c *gin.Context) {
	if p := principal(c); p == nil || !p.IsAdmin {
		fail(c, apiError(http.StatusForbidden, "forbidden", "This needs an administrator."))
		return
	}
	c.Next()
}

type userJSON struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	// DisplayName is what the app shows for the user. Lightbox records
	// no name, so it is the address's part before the @.
	DisplayName string    `json:"displayName"`
	IsAdmin     bool      `json:"isAdmin"`
	CreatedAt   time.Time `json:"createdAt"`
}

type sessionJSON struct {
	User      userJSON   `json:"user"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// Quotas are the caller's limits and what is used of each.
	Quotas *quotasJSON `json:"quotas,omitempty"`
	// UploadOrigins are where upload URLs lead (see uploadOrigins).
	UploadOrigins []string `json:"uploadOrigins,omitempty"`
}

func toUserJSON(p *store.Principal) userJSON {
	name, _, _ := strings.Cut(p.Email, "@")
	return userJSON{ID: p.ID.String(), Email: p.Email, DisplayName: name, IsAdmin: p.IsAdmin, CreatedAt: p.CreatedAt.UTC()}
}

// createSession exchanges an API key (in the body or the Bearer header), or
// a code mailed by POST /v1/auth/login ({challengeId, code}), for an
// HttpOnly, SameSite=Strict cookie, so the web pages never hold a key.
// Only these make a session: an access token lasts an hour and is
// refreshed, and must not become a week's cookie. A code's session has a
// key of its own, revoked when it signs out; with keep false (the
// default for a code) its cookie ends with the browser, and the session
// within webSessionTTL.
func (s *Server) createSession(c *gin.Context) {
	var in struct {
		APIKey      string    `json:"apiKey"`
		ChallengeID uuid.UUID `json:"challengeId"`
		Code        string    `json:"code"`
		Keep        *bool     `json:"keep"`
	}
	if h := c.GetHeader("Authorization"); h != "" {
		key, ok := bearerToken(h)
		if !ok || key == "" {
			fail(c, s.failedCredential(c, apiError(http.StatusUnauthorized, "invalid_credentials", "The Authorization header must be 'Bearer <api key>'.")))
			return
		}
		in.APIKey = key
	} else {
		if err := decodeJSON(c, &in); err != nil {
			fail(c, err)
			return
		}
		if in.APIKey == "" && in.ChallengeID != uuid.Nil {
			s.codeSession(c, in.ChallengeID, in.Code, in.Keep != nil && *in.Keep)
			return
		}
		if in.APIKey == "" {
			fail(c, app.FieldErrors{"apiKey": "is required, or challengeId and code"}.Err())
			return
		}
	}
	p, err := s.store.PrincipalByAPIKey(c.Request.Context(), in.APIKey)
	if errors.Is(err, store.ErrNotFound) {
		msg := "The API key is unknown or revoked."
		if strings.HasPrefix(in.APIKey, store.AccessPrefix) || strings.HasPrefix(in.APIKey, store.RefreshPrefix) {
			msg = "Only an API key makes a session; a sign-in token is used as it is and refreshed with /v1/auth/refresh."
		}
		err = s.failedCredential(c, apiError(http.StatusUnauthorized, "invalid_credentials", "%s", msg))
	}
	if err != nil {
		fail(c, err)
		return
	}
	keep := in.Keep == nil || *in.Keep
	sess, err := s.app.StartSession(c.Request.Context(), p.KeyID, s.sessionTTL(keep))
	if err != nil {
		fail(c, err)
		return
	}
	s.answerSession(c, p, sess, keep)
}

// webSessionTTL is how long a session not kept lasts at most, should its
// browser stay open.
const webSessionTTL = 12 * time.Hour

// codeSession signs in with a mailed code: the code is checked as
// POST /v1/auth/verify checks it, and the session gets a key of its own.
func (s *Server) codeSession(c *gin.Context, challenge uuid.UUID, code string, keep bool) {
	if len(code) != 6 || strings.Trim(code, "0123456789") != "" {
		fail(c, app.FieldErrors{"code": "must be the 6 digits from the mail"}.Err())
		return
	}
	p, sess, err := s.app.FinishWebSignIn(c.Request.Context(), codeGuesses{s, c}, challenge, code, s.sessionTTL(keep))
	if err != nil {
		fail(c, codeFailure(err))
		return
	}
	s.answerSession(c, p, sess, keep)
}

// sessionTTL is how long a session lasts: kept, SESSION_TTL; else its
// cookie ends with the browser, and the session within webSessionTTL.
func (s *Server) sessionTTL(keep bool) time.Duration {
	if !keep {
		return min(s.cfg.SessionTTL, webSessionTTL)
	}
	return s.cfg.SessionTTL
}

// answerSession sets the cookie of sess, p's session, lasting until the
// session ends when kept, else until the browser closes.
func (s *Server) answerSession(c *gin.Context, p *store.Principal, sess app.Session, keep bool) {
	cookie := &http.Cookie{
		Name: sessionCookie, Value: sess.Token, Path: "/",
		HttpOnly: true, Secure: s.cfg.SecureCookies(), SameSite: http.SameSiteStrictMode,
	}
	if keep {
		cookie.Expires = sess.Expires
	}
	http.SetCookie(c.Writer, cookie)
	c.JSON(http.StatusCreated, sessionJSON{User: toUserJSON(p), ExpiresAt: &sess.Expires})
}

func (s *Server) getSession(c *gin.Context) {
	p := principal(c)
	u, err := s.store.Usage(c.Request.Context(), p.ID)
	if err != nil {
		fail(c, err)
		return
	}
	q := s.toQuotasJSON(u)
	c.JSON(http.StatusOK, sessionJSON{User: toUserJSON(p), Quotas: &q, UploadOrigins: s.uploadOrigins(c.Request.Context())})
}

// deleteSession signs out the credential the request came with. A cookie
// session ends. An access token stands for a device signed in by mail,
// whose own API key (made by /v1/auth/verify, never shown) holds its
// access and refresh tokens: the key is revoked, so the refresh token
// cannot bring the device back. An API key is no session: it is refused,
// not revoked, since only an administrator makes another.
func (s *Server) deleteSession(c *gin.Context) {
	ctx := c.Request.Context()
	if h := c.GetHeader("Authorization"); h != "" {
		// authenticate resolved this header to the principal.
		if token, _ := bearerToken(h); !strings.HasPrefix(token, store.AccessPrefix) {
			fail(c, apiError(http.StatusBadRequest, "not_a_session",
				"An API key is not a session: it works until it is revoked (lightbox keys revoke)."))
			return
		}
		if err := s.app.SignOutDevice(ctx, principal(c).KeyID); err != nil {
			fail(c, err)
			return
		}
		c.Status(http.StatusNoContent)
		return
	}
	if token, err := c.Cookie(sessionCookie); err == nil {
		if err := s.app.EndSession(ctx, principal(c).KeyID, token); err != nil {
			fail(c, err)
			return
		}
	}
	http.SetCookie(c.Writer, &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.cfg.SecureCookies(), SameSite: http.SameSiteStrictMode,
	})
	c.Status(http.StatusNoContent)
}
