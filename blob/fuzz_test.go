package blob_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"lightbox/blob"
)

// FuzzVerify signs a grant, then checks that its own URL verifies as
// exactly that grant and that any other query, key or method (the
// fuzzer's tampering) is refused unless it grants exactly the same.
func FuzzVerify(f *testing.F) {
	s := blob.NewSigner([]byte("fuzz-secret-0123456789abcdef0123456789"), "https://photos.example.org/blobs")
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, method, key string, exp, max int64, ct, tamper, key2, method2 string) {
		g := blob.Grant{Method: method, Key: key, Expires: time.Unix(exp, 0), MaxSize: max, ContentType: ct}
		if max < 0 {
			g.MaxSize = 0 // never signed: the signer omits it
		}
		raw := s.URL(g)
		u, err := url.Parse(raw)
		if err != nil {
			return // a key no URL can carry is never handed out
		}
		q := u.Query()
		got, err := s.Verify(method, key, q, now)
		if strings.Contains(method+key+ct, "\n") {
			// Fields are joined with newlines before signing: a grant
			// holding one is refused, never taken for another.
			if err != blob.ErrBadSignature {
				t.Fatalf("a grant with a newline verified: %+v, %v", got, err)
			}
			return
		}
		if err != nil && err != blob.ErrExpired {
			t.Fatalf("its own URL %s: %v", raw, err)
		}
		if !same(got, g) {
			t.Fatalf("its own URL %s grants %+v, want %+v", raw, got, g)
		}

		// Tamper: replace or add query fields, change the key or method.
		tq, err := url.ParseQuery(tamper)
		if err != nil {
			return
		}
		for k, vs := range tq {
			q[k] = vs
		}
		got, err = s.Verify(method2, key2, q, now)
		if err == nil || err == blob.ErrExpired {
			if !same(got, g) {
				t.Fatalf("a tampered URL (%s %s ?%s) was accepted for %+v; signed %+v", method2, key2, q.Encode(), got, g)
			}
		}
	})
}

// same reports whether two grants allow the same thing.
func same(a, b blob.Grant) bool {
	return a.Method == b.Method && a.Key == b.Key && a.Expires.Equal(b.Expires) &&
		a.MaxSize == b.MaxSize && strings.Compare(a.ContentType, b.ContentType) == 0
}
