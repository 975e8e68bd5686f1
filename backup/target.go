package backup

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"lightbox/blob"
)

// Target is where backups are kept: a folder or an S3 prefix. Keys are
// relative to it, and nothing a Put writes is visible at its key before
// every byte is.
type Target interface {
	// Put writes r at key. With sum (lowercase hex SHA-256) it writes
	// exactly size bytes and keeps them only if they have that SHA-256,
	// answering a *MismatchError otherwise; without, size may be -1.
	Put(ctx context.Context, key string, r io.Reader, size int64, sum string) (blob.Info, error)
	Open(ctx context.Context, key string) (io.ReadSeekCloser, blob.Info, error)
	// List calls fn with every object whose key starts with prefix
	// (SHA256 empty); an error from fn ends the listing with it.
	List(ctx context.Context, prefix string, fn func(blob.Info) error) error
	Delete(ctx context.Context, key string) error
	String() string
}

// MismatchError is a Put whose bytes were not those its SHA-256 named:
// nothing was kept. Got is what was read.
type MismatchError struct {
	Key  string
	Want string
	Got  blob.Info
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s: read %d bytes with SHA-256 %s, not %s", e.Key, e.Got.Size, e.Got.SHA256, e.Want)
}

// Location is where --to or --from points: a folder, or an S3 bucket with
// a key prefix (blob.Location, which config reads BACKUP_TO into).
type Location = blob.Location

// ParseLocation reads "DIR" or "s3://BUCKET[/PREFIX]".
func ParseLocation(s string) (Location, error) { return blob.ParseLocation(s) }

// OpenTarget opens l. A bucket is reached with s3 (its Bucket replaced by
// l's). With create, a missing folder or bucket is made, for a first
// backup; otherwise it is an error.
func OpenTarget(ctx context.Context, l Location, s3 blob.S3Config, create bool) (Target, error) {
	if l.Bucket == "" {
		return openDir(l.Dir, create)
	}
	s3.Bucket = l.Bucket
	return openS3(ctx, s3, l, create)
}

// dirTarget keeps backups in a folder through the disk blob store, whose
// writes land whole or not at all.
type dirTarget struct {
	root string
	d    *blob.Disk
}

func openDir(dir string, create bool) (*dirTarget, error) {
	if !create {
		st, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("backup folder: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("backup folder %s is not a folder", dir)
		}
	}
	d, err := blob.NewDisk(dir)
	if err != nil {
		return nil, fmt.Errorf("backup folder: %w", err)
	}
	abs, _ := filepath.Abs(dir)
	return &dirTarget{root: abs, d: d}, nil
}

func (t *dirTarget) String() string { return t.root }

func (t *dirTarget) Put(ctx context.Context, key string, r io.Reader, size int64, sum string) (blob.Info, error) {
	w, err := t.d.Create(ctx, key)
	if err != nil {
		return blob.Info{}, err
	}
	defer w.Abort()
	if _, err := io.Copy(w, ctxReader{ctx, r}); err != nil {
		return blob.Info{}, err
	}
	if got := w.Written(); sum != "" && (got.SHA256 != sum || got.Size != size) {
		return blob.Info{}, &MismatchError{Key: key, Want: sum, Got: got}
	}
	return w.Commit()
}

func (t *dirTarget) Open(ctx context.Context, key string) (io.ReadSeekCloser, blob.Info, error) {
	return t.d.Open(ctx, key)
}

// Delete also removes a backup's folder with its last file. Blob folders
// stay: a backup may be about to write into one.
func (t *dirTarget) Delete(ctx context.Context, key string) error {
	if err := t.d.Delete(ctx, key); err != nil {
		return err
	}
	if strings.HasPrefix(key, "backups/") {
		os.Remove(filepath.Dir(filepath.Join(t.root, filepath.FromSlash(key)))) // fails while the folder holds anything
	}
	return nil
}

// List walks only the folder the prefix names, leaving out the temporary
// files of writes in progress.
func (t *dirTarget) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	return t.d.ListPrefix(ctx, prefix, fn)
}

// s3Target keeps backups under a prefix of a bucket. Reads and streamed
// writes go through the S3 blob store; listing a prefix and a write whose
// SHA-256 the bucket itself checks (the signed payload hash) use a
// minio-go client of the same bucket, since the blob store has neither.
type s3Target struct {
	s      *blob.S3
	c      *minio.Client
	bucket string
	prefix string
	name   string
}

func openS3(ctx context.Context, cfg blob.S3Config, l Location, create bool) (*s3Target, error) {
	s, err := blob.NewS3(cfg)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("S3 endpoint %q is not an http(s) URL", cfg.Endpoint)
	}
	lookup := minio.BucketLookupDNS
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure:       u.Scheme == "https",
		Region:       cmp.Or(cfg.Region, "us-east-1"),
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, err
	}
	t := &s3Target{s: s, c: c, bucket: cfg.Bucket, prefix: l.Prefix, name: l.String() + " at " + cfg.Endpoint}
	if create {
		err = s.EnsureBucket(ctx)
	} else {
		err = s.Ping(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("backup bucket %s: %w", t.name, err)
	}
	return t, nil
}

func (t *s3Target) String() string { return t.name }

// maxCheckedPut is the largest object S3 takes in one request; a larger
// one is a multipart upload, checked before it is completed.
const maxCheckedPut = 5 << 30

func (t *s3Target) Put(ctx context.Context, key string, r io.Reader, size int64, sum string) (blob.Info, error) {
	full := t.prefix + key
	if sum == "" {
		info, err := t.s.Put(ctx, full, r, 1<<62)
		info.Key = key
		return info, err
	}
	if size > maxCheckedPut {
		return t.putMultipart(ctx, key, r, size, sum)
	}
	h := &hashingReader{r: ctxReader{ctx, r}, h: sha256.New()}
	_, err := minio.Core{Client: t.c}.PutObject(ctx, t.bucket, full, h, size, "", sum,
		minio.PutObjectOptions{ContentType: "application/octet-stream"})
	got := h.info(key)
	if h.n == size && got.SHA256 != sum {
		// A bucket that does not check the payload hash kept the bytes.
		if err == nil {
			t.s.Delete(context.WithoutCancel(ctx), full)
		}
		return blob.Info{}, &MismatchError{Key: key, Want: sum, Got: got}
	}
	if err != nil {
		return blob.Info{}, t.err(err)
	}
	return got, nil
}

func (t *s3Target) putMultipart(ctx context.Context, key string, r io.Reader, size int64, sum string) (blob.Info, error) {
	w, err := t.s.Create(ctx, t.prefix+key)
	if err != nil {
		return blob.Info{}, err
	}
	defer w.Abort()
	if _, err := io.Copy(w, ctxReader{ctx, r}); err != nil {
		return blob.Info{}, err
	}
	if got := w.Written(); got.SHA256 != sum || got.Size != size {
		got.Key = key
		return blob.Info{}, &MismatchError{Key: key, Want: sum, Got: got}
	}
	info, err := w.Commit()
	info.Key = key
	return info, err
}

func (t *s3Target) Open(ctx context.Context, key string) (io.ReadSeekCloser, blob.Info, error) {
	f, info, err := t.s.Open(ctx, t.prefix+key)
	info.Key = key
	return f, info, err
}

func (t *s3Target) Delete(ctx context.Context, key string) error {
	return t.s.Delete(ctx, t.prefix+key)
}

func (t *s3Target) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the listing's goroutine when fn stops it
	for o := range t.c.ListObjects(ctx, t.bucket, minio.ListObjectsOptions{Prefix: t.prefix + prefix, Recursive: true}) {
		if o.Err != nil {
			return t.err(o.Err)
		}
		if err := fn(blob.Info{Key: strings.TrimPrefix(o.Key, t.prefix), Size: o.Size, ModTime: o.LastModified}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// err marks a bucket that does not answer as blob.ErrUnavailable, as the
// blob store's own errors are.
func (t *s3Target) err(err error) error {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %w", blob.ErrUnavailable, err)
	}
	return err
}

// ctxReader stops a long copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// hashingReader hashes and counts what is read through it.
type hashingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}

func (h *hashingReader) info(key string) blob.Info {
	return blob.Info{Key: key, Size: h.n, SHA256: hex.EncodeToString(h.h.Sum(nil))}
}
