package blob

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config says where an S3-compatible bucket is and how to reach it.
type S3Config struct {
	// Endpoint is the service's base URL, such as "https://s3.eu-west-1.amazonaws.com"
	// or "http://127.0.0.1:7070"; its scheme decides TLS.
	Endpoint        string
	Region          string
	Bucket          string
	AccessKeyID     string
	SecretAccessKey string
	// PathStyle puts the bucket in the path instead of the host name, as
	// most self-hosted servers need.
	PathStyle bool
	// PublicEndpoint is where browsers reach the service, when that is
	// not Endpoint (a server on a private network); presigned URLs lead
	// there.
	PublicEndpoint string
}

// s3PartSize bounds the memory one write holds: objects up to it go up in
// one request, larger ones as a multipart upload of such parts.
const s3PartSize = 16 << 20

// S3 stores objects in one bucket of an S3-compatible service. It is also
// the URLSigner of its objects: browsers PUT and GET on presigned URLs
// straight to the bucket.
type S3 struct {
	c      *minio.Client
	core   minio.Core
	signer *minio.Client // c, or one for PublicEndpoint
	bucket string
	origin string // where presigned URLs lead
}

// NewS3 returns a store on cfg's bucket. It does not contact the service.
func NewS3(cfg S3Config) (*S3, error) {
	c, err := s3Client(cfg, cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	s := &S3{c: c, core: minio.Core{Client: c}, signer: c, bucket: cfg.Bucket}
	if cfg.PublicEndpoint != "" && cfg.PublicEndpoint != cfg.Endpoint {
		if s.signer, err = s3Client(cfg, cfg.PublicEndpoint); err != nil {
			return nil, err
		}
	}
	// Presigned URLs name the bucket in the host unless it goes in the
	// path (s3Client's BucketLookup).
	u := s.signer.EndpointURL()
	s.origin = u.Scheme + "://" + u.Host
	if !cfg.PathStyle {
		s.origin = u.Scheme + "://" + cfg.Bucket + "." + u.Host
	}
	return s, nil
}

// Origin is where presigned URLs lead: the bucket's own host, or the
// endpoint's when the bucket is in the path.
func (s *S3) Origin() string { return s.origin }

// s3Client returns a client for endpoint. Given the region, presigning
// makes no request.
func s3Client(cfg S3Config, endpoint string) (*minio.Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("S3 endpoint %q is not an http(s) URL", endpoint)
	}
	lookup := minio.BucketLookupDNS
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	return minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure:       u.Scheme == "https",
		Region:       cmp.Or(cfg.Region, "us-east-1"),
		BucketLookup: lookup,
	})
}

// EnsureBucket makes the bucket when it does not exist yet.
func (s *S3) EnsureBucket(ctx context.Context) error {
	ok, err := s.c.BucketExists(ctx, s.bucket)
	if err != nil || ok {
		return err
	}
	err = s.c.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{})
	var e minio.ErrorResponse
	if errors.As(err, &e) && (e.Code == "BucketAlreadyOwnedByYou" || e.Code == "BucketAlreadyExists") {
		return nil
	}
	return err
}

// Put implements Store. An object that fits one part goes up in one
// request, a larger one as a multipart upload.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, limit int64) (Info, error) {
	if err := CheckKey(key); err != nil {
		return Info{}, err
	}
	lr := &limitReader{r: contextReader{ctx, r}, left: limit}
	head := make([]byte, min(limit+1, s3PartSize+1))
	n, err := io.ReadFull(lr, head)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return s.putWhole(ctx, key, head[:n])
	case err != nil:
		return Info{}, err
	case lr.left < 0:
		return Info{}, ErrTooLarge
	}
	w := s.create(ctx, key)
	defer w.Abort()
	if _, err := w.Write(head); err != nil {
		return Info{}, err
	}
	if _, err := io.Copy(w, lr); err != nil {
		return Info{}, err
	}
	return w.Commit()
}

func (s *S3) putWhole(ctx context.Context, key string, b []byte) (Info, error) {
	sum := sha256.Sum256(b)
	_, err := s.c.PutObject(ctx, s.bucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{
		ContentType: "application/octet-stream"})
	if err != nil {
		return Info{}, s.err(key, err)
	}
	return Info{Key: key, Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:]), ModTime: time.Now()}, nil
}

// limitReader fails with ErrTooLarge once more than left bytes are read,
// so an upload in progress is abandoned rather than completed.
type limitReader struct {
	r    io.Reader
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if l.left -= int64(n); l.left < 0 {
		return n, ErrTooLarge
	}
	return n, err
}

// Create implements Store: the bytes stream into a multipart upload that
// completes on Commit; Abort, or a process that dies, leaves only the
// incomplete upload, which RemoveStale clears.
func (s *S3) Create(ctx context.Context, key string) (Writer, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	return s.create(ctx, key), nil
}

func (s *S3) create(ctx context.Context, key string) *s3Writer {
	pr, pw := io.Pipe()
	w := &s3Writer{key: key, pw: pw, h: sha256.New(), done: make(chan error, 1)}
	go func() {
		_, err := s.c.PutObject(ctx, s.bucket, key, pr, -1, minio.PutObjectOptions{
			PartSize: s3PartSize, ContentType: "application/octet-stream"})
		err = s.err(key, err)
		pr.CloseWithError(err)
		w.done <- err
	}()
	return w
}

var errAborted = errors.New("blob: write aborted")

type s3Writer struct {
	key    string
	pw     *io.PipeWriter
	h      hash.Hash
	n      int64
	done   chan error
	closed bool
}

func (w *s3Writer) Write(b []byte) (int, error) {
	n, err := w.pw.Write(b)
	w.h.Write(b[:n])
	w.n += int64(n)
	return n, err
}

func (w *s3Writer) Written() Info {
	return Info{Key: w.key, Size: w.n, SHA256: hex.EncodeToString(w.h.Sum(nil))}
}

// Sync implements Writer: the bucket makes the object durable on Commit.
func (w *s3Writer) Sync() error { return nil }

func (w *s3Writer) Commit() (Info, error) {
	if w.closed {
		return Info{}, errors.New("blob: writer already closed")
	}
	w.closed = true
	w.pw.Close()
	if err := <-w.done; err != nil {
		return Info{}, err
	}
	info := w.Written()
	info.ModTime = time.Now()
	return info, nil
}

func (w *s3Writer) Abort() error {
	if w.closed {
		return nil
	}
	w.closed = true
	w.pw.CloseWithError(errAborted)
	<-w.done
	return nil
}

// Stat implements Store. The SHA-256 is the bucket's own when the object
// went up whole with one (x-amz-checksum-sha256); otherwise, as for a
// browser's upload, the bytes are read and hashed.
func (s *S3) Stat(ctx context.Context, key string) (Info, error) {
	if err := CheckKey(key); err != nil {
		return Info{}, err
	}
	oi, err := s.c.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{Checksum: true})
	if err != nil {
		return Info{}, s.err(key, err)
	}
	info := Info{Key: key, Size: oi.Size, ModTime: oi.LastModified}
	// A multipart object's checksum is of its parts' checksums: "…-N".
	if sum, err := base64.StdEncoding.DecodeString(oi.ChecksumSHA256); err == nil && len(sum) == sha256.Size &&
		!strings.Contains(oi.ChecksumSHA256, "-") && oi.ChecksumMode != "COMPOSITE" {
		info.SHA256 = hex.EncodeToString(sum)
		return info, nil
	}
	read, err := s.hash(ctx, key)
	if err != nil {
		return Info{}, err
	}
	info.Size, info.SHA256 = read.Size, read.SHA256
	return info, nil
}

// Open implements Store. The Info it returns has no checksum.
func (s *S3) Open(ctx context.Context, key string) (io.ReadSeekCloser, Info, error) {
	if err := CheckKey(key); err != nil {
		return nil, Info{}, err
	}
	obj, err := s.c.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, Info{}, s.err(key, err)
	}
	oi, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, Info{}, s.err(key, err)
	}
	return s3Reader{obj, key, s}, Info{Key: key, Size: oi.Size, ModTime: oi.LastModified}, nil
}

// s3Reader is an object being read, whose errors say, as the store's do,
// when the service stopped answering.
type s3Reader struct {
	*minio.Object
	key string
	s   *S3
}

func (r s3Reader) Read(p []byte) (int, error) {
	n, err := r.Object.Read(p)
	if err != nil && err != io.EOF {
		err = r.s.err(r.key, err)
	}
	return n, err
}

// Ping implements Pinger: the bucket answers and exists.
func (s *S3) Ping(ctx context.Context) error {
	ok, err := s.c.BucketExists(ctx, s.bucket)
	if err == nil && !ok {
		err = fmt.Errorf("bucket %s does not exist", s.bucket)
	}
	return err
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	return s.err(key, s.c.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}))
}

// List implements Lister, in key order; multipart uploads not yet
// completed are not objects yet.
func (s *S3) List(ctx context.Context, fn func(Info) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the listing's goroutine when fn stops it
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			return s.err("", o.Err)
		}
		if err := fn(Info{Key: o.Key, Size: o.Size, ModTime: o.LastModified}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// RemoveStale implements StaleRemover: it aborts multipart uploads begun
// more than age ago, what a writer killed mid-way leaves in the bucket.
func (s *S3) RemoveStale(ctx context.Context, age time.Duration) (int, error) {
	cutoff := time.Now().Add(-age)
	n := 0
	for u := range s.c.ListIncompleteUploads(ctx, s.bucket, "", true) {
		if u.Err != nil {
			return n, u.Err
		}
		if u.Initiated.Before(cutoff) {
			if err := s.core.AbortMultipartUpload(ctx, s.bucket, u.Key, u.UploadID); err == nil {
				n++
			}
		}
	}
	return n, nil
}

// err maps the service's "no such key" to ErrNotFound, and a service
// that does not answer to ErrUnavailable.
func (s *S3) err(key string, err error) error {
	if err == nil {
		return nil
	}
	if r := minio.ToErrorResponse(err); r.Code == "NoSuchKey" || r.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	if unavailable(err) {
		return fmt.Errorf("%s: %w: %w", key, ErrUnavailable, err)
	}
	return err
}

// unavailable tells an outage (no connection, a timeout, a connection cut
// off, a 5xx or a request to slow down) from a refusal of this request. A
// context that ended is the caller's doing, not the service's.
func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	var r minio.ErrorResponse
	return errors.As(err, &r) && (r.StatusCode >= 500 || r.StatusCode == http.StatusTooManyRequests || r.Code == "SlowDown")
}

// maxPresign is the longest life S3 gives a presigned URL.
const maxPresign = 7 * 24 * time.Hour

func presignLife(expires time.Time) time.Duration {
	return min(max(time.Until(expires).Truncate(time.Second), time.Second), maxPresign)
}

// SignPut implements URLSigner. Content-Type and Content-Length are signed
// headers, so the bucket refuses a body of another type or of any size but
// the one declared; browsers send Content-Length themselves. So is
// "If-None-Match: *": the bucket takes one PUT to the key and refuses the
// next with 412, so bytes a finalize accepted cannot be replaced while the
// URL lives, and a client that sees 412 knows its bytes already arrived.
func (s *S3) SignPut(ctx context.Context, g Grant) (SignedURL, error) {
	if err := CheckKey(g.Key); err != nil {
		return SignedURL{}, err
	}
	if g.MaxSize <= 0 {
		return SignedURL{}, errors.New("blob: an upload URL needs a size")
	}
	h := http.Header{}
	h.Set("Content-Length", strconv.FormatInt(g.MaxSize, 10))
	if g.ContentType != "" {
		h.Set("Content-Type", g.ContentType)
	}
	h.Set("If-None-Match", "*")
	life := presignLife(g.Expires)
	u, err := s.signer.PresignHeader(ctx, http.MethodPut, s.bucket, g.Key, life, nil, h)
	if err != nil {
		return SignedURL{}, err
	}
	headers := map[string]string{}
	for k := range h {
		headers[k] = h.Get(k)
	}
	return SignedURL{URL: u.String(), Headers: headers, Expires: time.Now().Add(life)}, nil
}

// SignGet implements URLSigner.
func (s *S3) SignGet(ctx context.Context, g Grant) (SignedURL, error) {
	if err := CheckKey(g.Key); err != nil {
		return SignedURL{}, err
	}
	q := url.Values{}
	if g.ContentType != "" {
		q.Set("response-content-type", g.ContentType)
	}
	life := presignLife(g.Expires)
	u, err := s.signer.PresignedGetObject(ctx, s.bucket, g.Key, life, q)
	if err != nil {
		return SignedURL{}, err
	}
	return SignedURL{URL: u.String(), Expires: time.Now().Add(life)}, nil
}
