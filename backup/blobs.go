package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"lightbox/blob"
)

// Outcome is what happened to one blob of a backup.
type Outcome string

// The outcomes of one blob.
const (
	Copied  Outcome = "copied"  // written to the target
	Present Outcome = "present" // the target held the same bytes already
	Absent  Outcome = "missing" // storage did not hold it (see Manifest.Missing)
)

// BlobEvent reports one blob done.
type BlobEvent struct {
	Key     string
	Size    int64
	Outcome Outcome
	// Done and Total count blobs, for a caller's progress.
	Done, Total int
}

// DefaultConcurrency is how many blobs move at once: enough to keep an
// S3 connection's round trips overlapping, few enough for a small disk.
const DefaultConcurrency = 8

// copier copies the service's blobs into a target by content.
type copier struct {
	src blob.Store
	dst Target
	// named says whether a row names key now, for a blob not found.
	named func(ctx context.Context, key string) (bool, error)

	mu      sync.Mutex
	present map[string]int64 // SHA-256 → size of what the target holds
	prev    map[string]Blob  // the newest complete backup's blobs, by key
}

// sourceError is a failure to read the service's storage, as opposed to
// writing the target.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return "the service's storage: " + e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

type sourceReader struct{ r io.Reader }

func (s sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		err = &sourceError{err}
	}
	return n, err
}

// loadPresent lists the blobs the target holds.
func (c *copier) loadPresent(ctx context.Context) error {
	c.present = map[string]int64{}
	return c.dst.List(ctx, "blobs/", func(i blob.Info) error {
		sum := i.Key[strings.LastIndex(i.Key, "/")+1:]
		if len(sum) == sha256.Size*2 && i.Key == BlobPath(sum) {
			c.present[sum] = i.Size
		}
		return nil
	})
}

func (c *copier) has(sum string, size int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.present[sum]
	return ok && n == size
}

func (c *copier) add(sum string, size int64) {
	c.mu.Lock()
	c.present[sum] = size
	c.mu.Unlock()
}

// result is one blob's: what the manifest records of it.
type result struct {
	blob    *Blob
	missing *Missing
	outcome Outcome
	copied  int64 // bytes written
}

// maxRereads bounds how often a file that changes while it is read is
// read again.
const maxRereads = 3

// copyOne backs up the file r names. The SHA-256 it should have (its
// row's, or the last backup's when the row records none) lets it skip
// what the target holds without reading it; otherwise the file is hashed
// first, since its place in the target is its SHA-256. Bytes that are not
// what was expected (a derived file drawn again since its row was read)
// are kept under their own SHA-256.
func (c *copier) copyOne(ctx context.Context, r blobRef) (result, error) {
	want, size := r.SHA256, r.Size
	if want == "" {
		if p, ok := c.prev[r.Key]; ok {
			want, size = p.SHA256, p.Size
		}
	}
	done := func(o Outcome, sum string, n, copied int64) result {
		return result{blob: &Blob{Key: r.Key, Kind: r.Kind, Size: n, SHA256: sum}, outcome: o, copied: copied}
	}
	if want != "" && c.has(want, size) {
		return done(Present, want, size, 0), nil
	}
	f, info, err := c.src.Open(ctx, r.Key)
	if errors.Is(err, blob.ErrNotFound) {
		return c.absent(ctx, r)
	}
	if err != nil {
		return result{}, &sourceError{err}
	}
	defer f.Close()
	if info.Size != size {
		want = "" // not the file the row or the last backup knew
	}
	size = info.Size
	for range maxRereads {
		if want == "" {
			h := sha256.New()
			if _, err := io.Copy(h, sourceReader{ctxReader{ctx, f}}); err != nil {
				return result{}, err
			}
			want = hex.EncodeToString(h.Sum(nil))
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return result{}, &sourceError{err}
			}
		}
		if c.has(want, size) {
			return done(Present, want, size, 0), nil
		}
		_, err := c.dst.Put(ctx, BlobPath(want), sourceReader{f}, size, want)
		var mismatch *MismatchError
		if errors.As(err, &mismatch) {
			want, size = "", mismatch.Got.Size
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return result{}, &sourceError{err}
			}
			continue
		}
		if err != nil {
			return result{}, err
		}
		c.add(want, size)
		return done(Copied, want, size, size), nil
	}
	return result{}, &sourceError{fmt.Errorf("%s changed each of the %d times it was read", r.Key, maxRereads)}
}

// absent records a file storage does not hold, saying whether anything
// is lost.
func (c *copier) absent(ctx context.Context, r blobRef) (result, error) {
	reason := NotUploaded
	if !r.Optional {
		named, err := c.named(ctx, r.Key)
		if err != nil {
			return result{}, err
		}
		reason = GoneSinceSnapshot
		if named {
			reason = NotStored
		}
	}
	return result{missing: &Missing{Key: r.Key, Kind: r.Kind, Reason: reason}, outcome: Absent}, nil
}

// parallel runs fn on items 0..n-1 with conc goroutines, stopping at the
// first error, which it returns.
func parallel(ctx context.Context, n, conc int, fn func(ctx context.Context, i int) error) error {
	return parallelAt(ctx, n, conc, false, fn)
}

// inBackground is parallel with its goroutines at a lower CPU priority
// than the rest of the process (lowerPriority), for work done while the
// service serves: on a busy machine it yields the cores to the service
// and takes what they leave; on an idle one it runs as fast.
func inBackground(ctx context.Context, n, conc int, fn func(ctx context.Context, i int) error) error {
	return parallelAt(ctx, n, conc, true, fn)
}

func parallelAt(ctx context.Context, n, conc int, background bool, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range min(conc, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if background {
				lowerPriority()
			}
			for i := range next {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err })
					cancel(err)
				}
			}
		}()
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return context.Cause(ctx)
}
