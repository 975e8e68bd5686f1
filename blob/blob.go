// Package blob provides object storage for originals, derived files and
// exports: a Store interface, a URLSigner interface for the short-lived URLs
// browsers use to move bytes straight to and from storage, and a local-disk
// backend that writes atomically and signs its URLs with HMAC.
package blob

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"time"
)

// Errors a Store returns.
var (
	ErrNotFound = errors.New("blob not found")
	ErrTooLarge = errors.New("blob larger than allowed")
	ErrBadKey   = errors.New("bad blob key")
	// ErrUnavailable is a storage service that does not answer: it may
	// answer later, unlike a refusal.
	ErrUnavailable = errors.New("blob storage unavailable")
	// ErrFull is storage out of space (or over its quota): nothing was
	// kept, and the same write can succeed once space is freed.
	ErrFull = errors.New("blob storage full")
)

// Info describes a stored object.
type Info struct {
	Key     string
	Size    int64
	SHA256  string // lowercase hex
	ModTime time.Time
}

// Store keeps objects by key.
type Store interface {
	// Put streams r into key, computing its SHA-256 on the way. Nothing is
	// visible at key until every byte is durable. More than limit bytes is
	// ErrTooLarge and leaves nothing behind.
	Put(ctx context.Context, key string, r io.Reader, limit int64) (Info, error)
	// Create opens a writer for a large object built in steps (an export);
	// it appears at key only on Commit.
	Create(ctx context.Context, key string) (Writer, error)
	Stat(ctx context.Context, key string) (Info, error)
	Open(ctx context.Context, key string) (io.ReadSeekCloser, Info, error)
	// Delete removes key; deleting what is not there is not an error.
	Delete(ctx context.Context, key string) error
}

// URLSigner makes the short-lived URLs through which browsers upload and
// download bytes without a handler in between. Each backend provides its
// own: the disk backend signs URLs to the server's own routes, an object
// store presigns URLs to its bucket. A URL allows exactly what its Grant
// says; the Grant's Method is set by the call.
type URLSigner interface {
	// SignPut returns a URL that takes one upload of exactly g.MaxSize
	// bytes of g.ContentType at g.Key until g.Expires. The request must
	// carry the headers it returns.
	SignPut(ctx context.Context, g Grant) (SignedURL, error)
	// SignGet returns a URL that reads g.Key until g.Expires, answered with
	// g.ContentType when one is given.
	SignGet(ctx context.Context, g Grant) (SignedURL, error)
	// Origin is the scheme and host every URL it signs leads to, for a
	// page's content security policy to let the browser reach.
	Origin() string
}

// SignedURL is an absolute URL with what a client needs to use it.
type SignedURL struct {
	URL string
	// Headers the request must carry exactly, such as Content-Type.
	Headers map[string]string
	// Expires is when the URL stops working; a backend may cap the Grant's.
	Expires time.Time
}

// URLVerifier is a URLSigner whose URLs lead to this service itself (the
// disk backend's): the route serving them checks each request with it.
// Backends whose URLs lead elsewhere have none, and the service mounts no
// such route.
type URLVerifier interface {
	// Verify checks a request for method on key with query q and returns
	// the Grant its URL was signed for: ErrBadSignature, or ErrExpired with
	// the Grant.
	Verify(method, key string, q url.Values, now time.Time) (Grant, error)
}

// Pinger is a Store that can say whether it can be used now, for a
// readiness check.
type Pinger interface {
	Ping(ctx context.Context) error
}

// StaleRemover is a Store that can leave temporary objects behind when a
// process dies in the middle of a write, and can remove them.
type StaleRemover interface {
	// RemoveStale deletes temporary objects older than age and says how
	// many it removed.
	RemoveStale(ctx context.Context, age time.Duration) (int, error)
}

// Lister is a Store that can list what it holds, to find objects no record
// names (`lightbox blobs orphans`).
type Lister interface {
	// List calls fn with the key, size and time of last write of every
	// object (SHA256 empty), leaving out writes still in progress; an error
	// from fn ends the listing with that error.
	List(ctx context.Context, fn func(Info) error) error
}

// Writer is an object being written.
type Writer interface {
	io.Writer
	// Written gives the size and SHA-256 of the bytes written so far, so
	// they can be recorded before Commit makes them visible.
	Written() Info
	// Sync makes the bytes written so far durable ahead of Commit, so
	// that wait can run beside other work; Commit does what Sync did not.
	Sync() error
	// Commit makes the object durable and visible.
	Commit() (Info, error)
	// Abort discards it. Safe after Commit.
	Abort() error
}

// CheckKey refuses keys that could escape the store: empty, absolute, with
// "." or ".." segments, backslashes or control characters.
func CheckKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.ContainsAny(key, "\\\x00") || len(key) > 512 {
		return ErrBadKey
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return ErrBadKey
		}
		for _, r := range seg {
			if r < 0x20 || r == 0x7f {
				return ErrBadKey
			}
		}
	}
	return nil
}
