package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"

	"github.com/minio/minio-go/v7"
)

// CopyOutcome is what CopyToS3 did with one object.
type CopyOutcome string

// The outcomes of one object.
const (
	Copied  CopyOutcome = "copied"
	Skipped CopyOutcome = "skipped" // already in the bucket with the same size and SHA-256
	Failed  CopyOutcome = "failed"
)

// CopyEvent reports one object done.
type CopyEvent struct {
	Key     string
	Size    int64
	Outcome CopyOutcome
	Err     error // set when Failed
	// Done and Total count objects, so a caller can show progress.
	Done, Total int
}

// CopySummary counts what a CopyToS3 run did.
type CopySummary struct {
	Copied, Skipped, Failed int
	Bytes                   int64 // bytes copied
}

// copyParallel is how many objects CopyToS3 moves at once.
const copyParallel = 4

// sha256Meta is the user metadata under which CopyToS3 records each
// object's SHA-256, so a run that starts again skips what is already
// there without reading it back.
const sha256Meta = "Sha256"

// CopyToS3 copies every object of from into to, for moving an install
// from disk to a bucket. It can be stopped and run again: an object
// already in the bucket with the same size and SHA-256 (the one a copy
// recorded beside it, else its bytes hashed) is skipped. Each copy is
// read back and hashed before it counts. report, which may be nil, is
// called once per object, from one goroutine at a time. The error is
// only for a store that cannot be listed; failures of single objects are
// reported and counted.
func CopyToS3(ctx context.Context, from *Disk, to *S3, report func(CopyEvent)) (CopySummary, error) {
	keys, err := from.keys(ctx)
	if err != nil {
		return CopySummary{}, err
	}
	var (
		sum   CopySummary
		mu    sync.Mutex
		wg    sync.WaitGroup
		next  = make(chan string)
		total = len(keys)
	)
	for range min(copyParallel, max(total, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range next {
				size, outcome, err := copyOne(ctx, from, to, key)
				mu.Lock()
				switch outcome {
				case Copied:
					sum.Copied++
					sum.Bytes += size
				case Skipped:
					sum.Skipped++
				default:
					sum.Failed++
				}
				if report != nil {
					report(CopyEvent{Key: key, Size: size, Outcome: outcome, Err: err,
						Done: sum.Copied + sum.Skipped + sum.Failed, Total: total})
				}
				mu.Unlock()
			}
		}()
	}
	for _, k := range keys {
		if ctx.Err() != nil {
			break
		}
		next <- k
	}
	close(next)
	wg.Wait()
	return sum, ctx.Err()
}

func copyOne(ctx context.Context, from *Disk, to *S3, key string) (int64, CopyOutcome, error) {
	info, err := from.Stat(ctx, key)
	if err != nil {
		return 0, Failed, err
	}
	want := info.SHA256
	if same, err := to.holds(ctx, key, info.Size, want); err != nil {
		return info.Size, Failed, err
	} else if same {
		return info.Size, Skipped, nil
	}
	f, _, err := from.Open(ctx, key)
	if err != nil {
		return info.Size, Failed, err
	}
	defer f.Close()
	// Bytes that changed since they were hashed fail the signed payload
	// hash or the read-back below.
	if err := to.putChecked(ctx, key, f, info.Size, want); err != nil {
		return info.Size, Failed, err
	}
	got, err := to.hash(ctx, key)
	switch {
	case err != nil:
		return info.Size, Failed, fmt.Errorf("read back: %w", err)
	case got.Size != info.Size || got.SHA256 != want:
		return info.Size, Failed, fmt.Errorf("the bucket holds %d bytes with SHA-256 %s, not %d bytes with %s", got.Size, got.SHA256, info.Size, want)
	}
	return info.Size, Copied, nil
}

// keys lists every object, in key order, leaving out the temporary files
// of writes in progress.
func (d *Disk) keys(ctx context.Context) ([]string, error) {
	var keys []string
	err := d.List(ctx, func(i Info) error {
		keys = append(keys, i.Key)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no blobs under %s: %w", d.root, err)
	}
	return keys, err
}

// holds reports whether key is in the bucket with size bytes whose
// SHA-256 is sum: by the SHA-256 a copy recorded beside it, else by
// hashing its bytes.
func (s *S3) holds(ctx context.Context, key string, size int64, sum string) (bool, error) {
	oi, err := s.c.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err = s.err(key, err); errors.Is(err, ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if oi.Size != size {
		return false, nil
	}
	if recorded := oi.UserMetadata[sha256Meta]; recorded != "" {
		return recorded == sum, nil
	}
	info, err := s.Stat(ctx, key)
	if err != nil {
		return false, err
	}
	return info.Size == size && info.SHA256 == sum, nil
}

// putChecked writes size bytes of r at key in one request whose payload
// hash is signed, so the bucket refuses bytes that changed on the way, and
// records their SHA-256 beside them.
func (s *S3) putChecked(ctx context.Context, key string, r io.Reader, size int64, sum string) error {
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", UserMetadata: map[string]string{sha256Meta: sum}}
	if size > maxSinglePut {
		_, err := s.c.PutObject(ctx, s.bucket, key, r, size, opts)
		return err
	}
	_, err := s.core.PutObject(ctx, s.bucket, key, r, size, "", sum, opts)
	return err
}

// maxSinglePut is the largest object S3 takes in one request.
const maxSinglePut = 5 << 30

// hash reads key and returns its size and SHA-256.
func (s *S3) hash(ctx context.Context, key string) (Info, error) {
	obj, err := s.c.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return Info{}, s.err(key, err)
	}
	defer obj.Close()
	h := sha256.New()
	n, err := io.Copy(h, contextReader{ctx, obj})
	if err != nil {
		return Info{}, s.err(key, err)
	}
	return Info{Key: key, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
