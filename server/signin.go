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

// codesPerAddress is the budget of codes mailed to one address, shared by
// every server process. Sign-in calls have a budget per client address
// (RATE_SIGNIN_*), spent in the route table.
var codesPerAddress = perPeriod(5, 10*time.Minute)

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
	if !s.allow(c, "signin-email:"+strings.ToLower(email), codesPerAddress, 1) {
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
	u, err := s.store.UseChallenge(ctx, in.ChallengeID, codeHash(in.ChallengeID, in.Code), codeAttempts)
	switch {
	case errors.Is(err, store.ErrWrongCode):
		fail(c, apiError(http.StatusUnauthorized, "invalid_code", "The code is wrong."))
		return
	case errors.Is(err, store.ErrCodeExpired):
		fail(c, apiError(http.StatusUnauthorized, "code_expired", "The code has expired, was used, or was tried too often; ask for a new one."))
		return
	case err != nil:
		fail(c, err)
		return
	}
	_, key, err := s.store.CreateAPIKey(ctx, u.ID, "sign-in "+time.Now().UTC().Format("2006-01-02"))
	if err != nil {
		fail(c, err)
		return
	}
	s.answerTokens(c, &store.Principal{User: *u, KeyID: key.ID})
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
