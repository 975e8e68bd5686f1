// Package blob provides object storage for originals, derived files and
// exports: a Store interface, a local-disk backend that writes atomically,
// and HMAC-signed URLs scoped like S3 presigned URLs.
package blob

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"
)

// Errors a Store returns.
var (
	ErrNotFound = errors.New("blob not found")
	ErrTooLarge = errors.New("blob larger than allowed")
	ErrBadKey   = errors.New("bad blob key")
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

// Writer is an object being written.
type Writer interface {
	io.Writer
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
