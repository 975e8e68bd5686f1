package blob

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Errors from verifying a signed URL.
var (
	ErrBadSignature = errors.New("bad signature")
	ErrExpired      = errors.New("url expired")
)

// Grant is what a signed URL allows: one method on one key until Expires,
// and for uploads a body of exactly MaxSize bytes of ContentType (the
// name is older than the rule: a shorter body is refused as well).
type Grant struct {
	Method      string
	Key         string
	Expires     time.Time
	MaxSize     int64
	ContentType string
}

// Signer is the disk backend's URLSigner and URLVerifier: it makes and
// checks signed URLs below a base URL (the server's own /blobs/ route). The
// signature is HMAC-SHA256 over every field of the Grant, so none can be
// changed without the secret.
type Signer struct {
	secret []byte
	base   string
}

// NewSigner returns a Signer for URLs below base, such as
// "https://photos.example.org/blobs".
func NewSigner(secret []byte, base string) *Signer {
	return &Signer{secret: secret, base: strings.TrimSuffix(base, "/")}
}

// Origin is the scheme and host of the base every URL is below.
func (s *Signer) Origin() string {
	u, err := url.Parse(s.base)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

func (s *Signer) mac(g Grant) string {
	m := hmac.New(sha256.New, s.secret)
	// Newline-separated fields: none may contain a newline (keys are
	// checked, content types come from a fixed list).
	m.Write([]byte(strings.Join([]string{
		g.Method, g.Key, strconv.FormatInt(g.Expires.Unix(), 10),
		strconv.FormatInt(g.MaxSize, 10), g.ContentType,
	}, "\n")))
	return hex.EncodeToString(m.Sum(nil))
}

// SignPut implements URLSigner.
func (s *Signer) SignPut(_ context.Context, g Grant) (SignedURL, error) {
	g.Method = "PUT"
	u := SignedURL{URL: s.URL(g), Expires: g.Expires}
	if g.ContentType != "" {
		u.Headers = map[string]string{"Content-Type": g.ContentType}
	}
	return u, nil
}

// SignGet implements URLSigner.
func (s *Signer) SignGet(_ context.Context, g Grant) (SignedURL, error) {
	g.Method = "GET"
	return SignedURL{URL: s.URL(g), Expires: g.Expires}, nil
}

// URL returns the absolute signed URL for g.
func (s *Signer) URL(g Grant) string {
	q := url.Values{}
	q.Set("exp", strconv.FormatInt(g.Expires.Unix(), 10))
	if g.MaxSize > 0 {
		q.Set("max", strconv.FormatInt(g.MaxSize, 10))
	}
	if g.ContentType != "" {
		q.Set("ct", g.ContentType)
	}
	q.Set("sig", s.mac(g))
	return s.base + "/" + escapeKey(g.Key) + "?" + q.Encode()
}

// Verify implements URLVerifier. A bad signature is checked before expiry,
// so a tampered expiry reads as tampering.
func (s *Signer) Verify(method, key string, q url.Values, now time.Time) (Grant, error) {
	exp, err1 := strconv.ParseInt(q.Get("exp"), 10, 64)
	var max int64
	var err2 error
	if v := q.Get("max"); v != "" {
		max, err2 = strconv.ParseInt(v, 10, 64)
	}
	if err1 != nil || err2 != nil {
		return Grant{}, ErrBadSignature
	}
	// The MAC joins the fields with newlines; a newline inside one (a key
	// from the path can carry %0A) would let a field's end pass for the
	// next field's start, and the signature of one grant verify another.
	if strings.Contains(method+key+q.Get("ct"), "\n") {
		return Grant{}, ErrBadSignature
	}
	g := Grant{Method: method, Key: key, Expires: time.Unix(exp, 0), MaxSize: max, ContentType: q.Get("ct")}
	if !hmac.Equal([]byte(s.mac(g)), []byte(q.Get("sig"))) {
		return Grant{}, ErrBadSignature
	}
	if !now.Before(g.Expires) {
		return g, ErrExpired
	}
	return g, nil
}

func escapeKey(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}
