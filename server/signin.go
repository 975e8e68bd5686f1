package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/abuse/guess"
	"lightbox/store"
)

// Sign-in by a code sent by mail (seed 002's flow).
const (
	codeTTL         = 10 * time.Minute
	codeAttempts    = 5
	accessTTL       = time.Hour
	refreshTTL      = 30 * 24 * time.Hour
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
		fail(c, fieldErrors{"email": "must be a mail address such as ana@example.org"}.err())
		return
	}
	if in.Locale != nil && !localePattern.MatchString(*in.Locale) {
		fail(c, fieldErrors{"locale": "must be a language tag such as en or pt-BR"}.err())
		return
	}
	mailbox := strings.ToLower(email)
	if !s.allow(c, "signin-email-client:"+mailbox+":"+c.ClientIP(), codesFromOneClient, 1) ||
		!s.allow(c, "signin-email:"+mailbox, codesPerMailbox, 1) {
		return
	}
	code, err := newCode()
	if err != nil {
		fail(c, err)
		return
	}
	id := uuid.New()
	ch, err := s.store.CreateChallenge(c.Request.Context(), id, email, codeHash(id, code), codeTTL)
	if err != nil {
		fail(c, err)
		return
	}
	if ch.UserID != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), signInMailLimit)
		go func() {
			defer cancel()
			body := fmt.Sprintf("Your Lightbox sign-in code is %s.\n\nIt works once, for %d minutes. If you did not ask to sign in, ignore this mail.\n",
				code, int(codeTTL.Minutes()))
			if err := s.mail.Send(ctx, email, "Your Lightbox sign-in code: "+code, body); err != nil {
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
	errs := fieldErrors{}
	if in.ChallengeID == uuid.Nil {
		errs.add("challengeId", "is required")
	}
	if len(in.Code) != 6 || strings.Trim(in.Code, "0123456789") != "" {
		errs.add("code", "must be the 6 digits from the mail")
	}
	if err := errs.err(); err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	u, err := s.tryCode(c, in.ChallengeID, in.Code)
	if err != nil {
		fail(c, codeFailure(err))
		return
	}
	_, key, err := s.store.CreateAPIKey(ctx, u.ID, "sign-in "+time.Now().UTC().Format("2006-01-02"))
	if err != nil {
		fail(c, err)
		return
	}
	s.answerTokens(c, &store.Principal{User: *u, KeyID: key.ID})
}

// codeFailure is the answer to a code tryCode refused.
func codeFailure(err error) error {
	switch {
	case errors.Is(err, store.ErrWrongCode):
		return apiError(http.StatusUnauthorized, "invalid_code", "The code is wrong.")
	case errors.Is(err, store.ErrCodeExpired):
		return apiError(http.StatusUnauthorized, "code_expired", "The code has expired, was used, or was tried too often; ask for a new one.")
	}
	return err
}

// tryCode checks code against challenge id, counted before the check; a
// right code is taken back from the counts, as it was no failure.
func (s *Server) tryCode(c *gin.Context, id uuid.UUID, code string) (*store.User, error) {
	ctx := c.Request.Context()
	ch, err := s.store.ChallengeByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !ch.Live(codeAttempts)) {
		return nil, store.ErrCodeExpired // no code is tried, so nothing is counted
	}
	if err != nil {
		return nil, err
	}
	scopes := guessScopes(c, ch.Email)
	if err := s.countGuess(c, scopes); err != nil {
		return nil, err
	}
	u, err := s.store.UseChallenge(ctx, id, codeHash(id, code), codeAttempts)
	if err == nil {
		if err := s.guesses.Forgive(context.WithoutCancel(ctx), scopes...); err != nil {
			logger(c).Warn("take back a right sign-in code", "err", err)
		}
	}
	return u, err
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
		fail(c, fieldErrors{"refreshToken": "must be a refresh token from /v1/auth/verify or /v1/auth/refresh"}.err())
		return
	}
	p, err := s.store.UseRefreshToken(c.Request.Context(), in.RefreshToken)
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
	s.answerTokens(c, p)
}

func (s *Server) answerTokens(c *gin.Context, p *store.Principal) {
	t, err := s.store.IssueTokens(c.Request.Context(), p.KeyID, accessTTL, refreshTTL)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, signInJSON{AccessToken: t.Access, RefreshToken: t.Refresh, ExpiresAt: t.AccessExpires, User: toUserJSON(p)})
}

// newCode is a uniformly random 6-digit code.
func newCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%06d", n.Int64()), nil
}

// codeHash binds a code to its challenge: the same code of another
// challenge hashes differently.
func codeHash(challenge uuid.UUID, code string) []byte {
	return store.HashSecret(challenge.String() + ":" + code)
}
