package server

import (
	"context"
	"errors"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/abuse/guess"
	"lightbox/app"
	"lightbox/store"
)

// Sign-in by a code sent by mail (seed 002's flow): app/signin.go.
const (
	maxEmailLen     = 254
	signInMailLimit = 30 * time.Second
)

// Codes mailed to one mailbox, budgets shared by every server process:
// from one client address, and from all of them. A stranger spending the
// first cannot stop the owner's next code from another address: one
// client's budget refills slower than the mailbox's. Sign-in calls have a
// budget per client address too (RATE_SIGNIN_*), spent in the route table.
var (
	codesFromOneClient = perPeriod(5, time.Hour)
	codesPerMailbox    = perPeriod(30, time.Hour)
)

// Tries of sign-in codes are counted before each is checked, across
// challenges, and slowed down (abuse/guess), never locked out:
//   - per mailbox from one client address: a run of logins and wrong codes
//     from one address gets 8 tries in its first hour, then about 1 an hour;
//   - per mailbox from anywhere: loose enough that one address's run never
//     slows the owner signing in from another, yet at most about 6 an hour
//     once many addresses guess together;
//   - per client address, whatever the mailbox, and for the whole service.
//
// Unknown mailboxes are counted like known ones, so the answers do not
// tell them apart. Admins sign in by the same rules.
var (
	guessMailboxFromClient = guess.Rule{Free: 3, Base: time.Minute, Max: time.Hour, Forget: time.Hour}
	guessMailbox           = guess.Rule{Free: 8, Base: time.Minute, Max: 10 * time.Minute, Forget: 15 * time.Minute}
	guessFromClient        = guess.Rule{Free: 20, Base: time.Minute, Max: time.Hour, Forget: time.Hour}
	guessAll               = guess.Rule{Free: 100, Base: time.Second, Max: time.Minute, Forget: 5 * time.Second}
)

// guessScopes are the counts a code tried for mailbox from this request's
// client address is kept in.
func guessScopes(c *gin.Context, mailbox string) []guess.Scope {
	const p = "lightbox:signin-guesses:"
	mailbox, client := strings.ToLower(mailbox), c.ClientIP()
	return []guess.Scope{
		{Key: p + "mailbox-client:" + mailbox + ":" + client, Rule: guessMailboxFromClient},
		{Key: p + "mailbox:" + mailbox, Rule: guessMailbox},
		{Key: p + "client:" + client, Rule: guessFromClient},
		{Key: p + "all", Rule: guessAll},
	}
}

type signInJSON struct {
	AccessToken  string    `json:"accessToken"`
	RefreshToken string    `json:"refreshToken"`
	ExpiresAt    time.Time `json:"expiresAt"`
	User         userJSON  `json:"user"`
}

// login mails a 6-digit code to a user's address. The answer is the same
// for an address no user has, and so is its timing: the mail goes out
// after the answer.
// localePattern is a BCP 47 language tag, loosely.
var localePattern = regexp.MustCompile(`^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8}){0,4}$`)

func (s *Server) login(c *gin.Context) {
	var in struct {
		Email string `json:"email"`
		// Locale is taken for the KILO SDK's sake; the mail is in English.
		Locale *string `json:"locale"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	email := strings.TrimSpace(in.Email)
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > maxEmailLen {
		fail(c, app.FieldErrors{"email": "must be a mail address such as ana@example.org"}.Err())
		return
	}
	if in.Locale != nil && !localePattern.MatchString(*in.Locale) {
		fail(c, app.FieldErrors{"locale": "must be a language tag such as en or pt-BR"}.Err())
		return
	}
	mailbox := strings.ToLower(email)
	if !s.allow(c, "signin-email-client:"+mailbox+":"+c.ClientIP(), codesFromOneClient, 1) ||
		!s.allow(c, "signin-email:"+mailbox, codesPerMailbox, 1) {
		return
	}
	id, m, err := s.app.StartSignIn(c.Request.Context(), email)
	if err != nil {
		fail(c, err)
		return
	}
	// app hands the mail back rather than sending it: the sender is this
	// package's (server/mail), and the mail must go after the answer.
	if m != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), signInMailLimit)
		go func() {
			defer cancel()
			if err := s.mail.Send(ctx, m.To, m.Subject, m.Body); err != nil {
				s.log.ErrorContext(ctx, "send sign-in code", "challenge", id, "err", err)
			}
		}()
	}
	c.JSON(http.StatusOK, gin.H{"challengeId": id, "delivery": "email_code"})
}

// verify exchanges a challenge's code for tokens: an access token for an
// hour and a refresh token, both of a new API key for this device.
func (s *Server) verify(c *gin.Context) {
	var in struct {
		ChallengeID uuid.UUID `json:"challengeId"`
		Code        string    `json:"code"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	if in.ChallengeID == uuid.Nil {
		errs.Add("challengeId", "is required")
	}
	if len(in.Code) != 6 || strings.Trim(in.Code, "0123456789") != "" {
		errs.Add("code", "must be the 6 digits from the mail")
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	p, t, err := s.app.FinishSignIn(c.Request.Context(), codeGuesses{s, c}, in.ChallengeID, in.Code)
	if err != nil {
		fail(c, codeFailure(err))
		return
	}
	answerTokens(c, p, t)
}

// codeFailure is the answer to a code the sign-in refused.
func codeFailure(err error) error {
	switch {
	case errors.Is(err, store.ErrWrongCode):
		return apiError(http.StatusUnauthorized, "invalid_code", "The code is wrong.")
	case errors.Is(err, store.ErrCodeExpired):
		return apiError(http.StatusUnauthorized, "code_expired", "The code has expired, was used, or was tried too often; ask for a new one.")
	}
	return err
}

// codeGuesses counts the codes a request tries (guessScopes) for the
// sign-in use cases: the counts are by client address, which only the
// request knows.
type codeGuesses struct {
	s *Server
	c *gin.Context
}

func (g codeGuesses) Take(_ context.Context, mailbox string) error {
	return g.s.countGuess(g.c, guessScopes(g.c, mailbox))
}

func (g codeGuesses) Forgive(ctx context.Context, mailbox string) {
	if err := g.s.guesses.Forgive(context.WithoutCancel(ctx), guessScopes(g.c, mailbox)...); err != nil {
		logger(g.c).Warn("take back a right sign-in code", "err", err)
	}
}

// countGuess counts a code tried in scopes before it is checked, and
// answers 429 with the wait when the guessing must slow down. Without
// Redis no code is checked: an uncounted guess is what the count is for.
func (s *Server) countGuess(c *gin.Context, scopes []guess.Scope) error {
	wait, err := s.guesses.Take(c.Request.Context(), s.now(), scopes...)
	if err != nil {
		logger(c).Error("count a sign-in code", "err", err)
		return apiError(http.StatusServiceUnavailable, "signin_unavailable", "Codes cannot be checked right now; retry shortly. API keys and signed-in devices still work.")
	}
	if wait <= 0 {
		return nil
	}
	s.metrics.refusedBy("signin-guesses:")
	return retryLater(c, wait, "rate_limited", "Too many wrong codes")
}

// refresh spends a refresh token for a new pair. A refresh token that
// comes back a second time was copied: the device's key is revoked.
func (s *Server) refresh(c *gin.Context) {
	var in struct {
		RefreshToken string `json:"refreshToken"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	if !strings.HasPrefix(in.RefreshToken, store.RefreshPrefix) {
		fail(c, app.FieldErrors{"refreshToken": "must be a refresh token from /v1/auth/verify or /v1/auth/refresh"}.Err())
		return
	}
	p, t, err := s.app.Refresh(c.Request.Context(), in.RefreshToken)
	switch {
	case errors.Is(err, store.ErrRefreshReused):
		fail(c, apiError(http.StatusUnauthorized, "refresh_reused", "This refresh token was used before; sign in again."))
		return
	case errors.Is(err, store.ErrNotFound):
		fail(c, apiError(http.StatusUnauthorized, "invalid_refresh_token", "The refresh token is unknown, expired or revoked; sign in again."))
		return
	case err != nil:
		fail(c, err)
		return
	}
	answerTokens(c, p, t)
}

func answerTokens(c *gin.Context, p *store.Principal, t *store.Tokens) {
	c.JSON(http.StatusOK, signInJSON{AccessToken: t.Access, RefreshToken: t.Refresh, ExpiresAt: t.AccessExpires, User: toUserJSON(p)})
}
