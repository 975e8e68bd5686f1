package e2e_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/minio/minio-go/v7"

	"lightbox/blob"
	"lightbox/chain"
	"lightbox/cmd/boot"
	"lightbox/config"
	"lightbox/server"
	"lightbox/testsupport/testenv"
)

// TestCopyBlobsToS3 moves an install that ran on disk to a bucket with
// `lightbox blobs copy --to s3`: a first run copies every blob, a second
// copies nothing, a blob changed in the bucket is found and copied again,
// and a server switched to the bucket then serves every file.
func TestCopyBlobsToS3(t *testing.T) {
	t.Parallel()
	logFile, err := os.Create(filepath.Join(t.TempDir(), "stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	s := startStack(t, logFile, nil)
	key := s.user("mo@example.org", false)
	project := s.createProject(key, "Moving")
	photos := distinctPhotos(t, 3)
	assets := make([]string, len(photos))
	for i, path := range photos {
		assets[i], _ = s.upload(key, project, path)
	}
	s.waitReady(key, project, len(photos))

	root := filepath.Join(s.dataDir, "blobs")
	onDisk := map[string][]byte{}
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || strings.HasPrefix(e.Name(), ".upload-") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		onDisk[filepath.ToSlash(rel)], err = os.ReadFile(path)
		return err
	})
	if err != nil || len(onDisk) < 3*len(photos) {
		t.Fatalf("%d blobs on disk (%v), want an original, a thumbnail and a preview per photo", len(onDisk), err)
	}

	bucket := testenv.S3(t)
	lightbox := testenv.Binary(t, "../cmd/lightbox")
	copyBlobs := func(env ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
		defer cancel()
		cmd := exec.CommandContext(ctx, lightbox, "blobs", "copy", "--to", "s3")
		cmd.Env = append(os.Environ(), "DATA_DIR="+s.dataDir, "S3_ENDPOINT="+bucket.Endpoint, "S3_REGION="+bucket.Region,
			"S3_BUCKET="+bucket.Bucket, "S3_ACCESS_KEY_ID="+bucket.AccessKeyID, "S3_SECRET_ACCESS_KEY="+bucket.SecretAccessKey,
			"S3_FORCE_PATH_STYLE=true")
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("lightbox blobs copy: %v", err)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	n := len(onDisk)
	if code, out := copyBlobs(); code != 0 || !strings.Contains(out, "skipped 0, failed 0") ||
		!strings.Contains(out, fmt.Sprintf("copied %d (", n)) || !strings.Contains(out, fmt.Sprintf("[%d/%d] ", n, n)) {
		t.Fatalf("first copy: status %d\n%s", code, out)
	}
	if code, out := copyBlobs(); code != 0 || !strings.Contains(out, fmt.Sprintf("copied 0 (0 bytes), skipped %d, failed 0", n)) {
		t.Fatalf("second copy: status %d\n%s", code, out)
	}

	// The same number of bytes, but not the same bytes: only a checksum
	// tells them apart.
	c := testenv.S3Client(t, bucket)
	original := blob.OriginalKey(uuid.MustParse(project), uuid.MustParse(assets[0]))
	spoilt := bytes.Repeat([]byte{0x5a}, len(onDisk[original]))
	ctx := context.Background()
	if _, err := c.PutObject(ctx, bucket.Bucket, original, bytes.NewReader(spoilt), int64(len(spoilt)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, out := copyBlobs(); code != 0 || !strings.Contains(out, fmt.Sprintf("copied 1 (%d bytes), skipped %d, failed 0", len(spoilt), n-1)) ||
		!strings.Contains(out, "copied "+original) {
		t.Fatalf("copy after a blob changed in the bucket: status %d\n%s", code, out)
	}
	if code, out := copyBlobs("S3_ENDPOINT=http://127.0.0.1:1"); code != 1 || !strings.Contains(out, "127.0.0.1:1") {
		t.Fatalf("copy to a bucket that does not answer: status %d, want 1 naming it\n%s", code, out)
	}

	// A server switched to the bucket, on the same database, serves every
	// file from there.
	url := serveFromBucket(t, s, bucket)
	switched := &stack{t: t, url: url}
	for _, a := range assets {
		if n := switched.readFilesFromBucket(key, a, bucket); n < 3 {
			t.Errorf("%s lists %d files through the server on the bucket, want an original, a thumbnail and a preview", a, n)
		}
	}
}

// serveFromBucket starts a second server on s's database and Redis with
// BLOB_BACKEND=s3 on bucket, and returns its URL.
func serveFromBucket(t *testing.T, s *stack, bucket blob.S3Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, chainKey, _ := ed25519.GenerateKey(nil)
	der, _ := x509.MarshalPKCS8PrivateKey(chainKey)
	vars := map[string]string{
		"DATABASE_URL": s.env.DSN, "REDIS_URL": s.env.RedisURL, "DATA_DIR": t.TempDir(),
		"HTTP_ADDR": ln.Addr().String(), "PUBLIC_URL": "http://" + ln.Addr().String(), "UPLOAD_SECRET": "e2e-secret-0123456789abcdef0123456789",
		"BLOB_BACKEND": "s3", "S3_ENDPOINT": bucket.Endpoint, "S3_REGION": bucket.Region, "S3_BUCKET": bucket.Bucket,
		"S3_ACCESS_KEY_ID": bucket.AccessKeyID, "S3_SECRET_ACCESS_KEY": bucket.SecretAccessKey, "S3_FORCE_PATH_STYLE": "true",
		"CHAIN_KEY": base64.StdEncoding.EncodeToString(der),
	}
	cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	blobs, signer, err := boot.Blobs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	queueOpt, _ := asynq.ParseRedisURI(cfg.RedisURL)
	queue, inspector := asynq.NewClient(queueOpt), asynq.NewInspector(queueOpt)
	srv := server.New(server.Deps{Config: cfg, Store: s.env.Store, Redis: s.env.Redis, Queue: queue, Inspector: inspector,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Blobs: blobs, Signer: signer, ChainKeys: chain.Keys{Current: chainKey.Public().(ed25519.PublicKey)}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server on the bucket: %v", err)
		}
		queue.Close()
		inspector.Close()
	})
	return "http://" + ln.Addr().String()
}
