package testenv

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"lightbox/blob"
)

// S3 gives t its own new bucket on the S3 server `make test` starts
// (LIGHTBOX_TEST_S3_ENDPOINT and its credentials), emptied and removed
// when t ends.
func S3(t testing.TB) blob.S3Config {
	t.Helper()
	endpoint := os.Getenv("LIGHTBOX_TEST_S3_ENDPOINT")
	if endpoint == "" {
		t.Fatal("LIGHTBOX_TEST_S3_ENDPOINT is not set: run the tests with `make test`, which starts a local S3 server")
	}
	cfg := blob.S3Config{Endpoint: endpoint, Region: "us-east-1", Bucket: strings.ReplaceAll(randomName("lightbox-test-"), "_", "-"),
		AccessKeyID: need(t, "LIGHTBOX_TEST_S3_ACCESS_KEY_ID"), SecretAccessKey: need(t, "LIGHTBOX_TEST_S3_SECRET_ACCESS_KEY"), PathStyle: true}
	c := S3Client(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
		t.Fatalf("S3 server at %s: %v", endpoint, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for u := range c.ListIncompleteUploads(ctx, cfg.Bucket, "", true) {
			if u.Err == nil {
				c.RemoveIncompleteUpload(ctx, cfg.Bucket, u.Key)
			}
		}
		objs := c.ListObjects(ctx, cfg.Bucket, minio.ListObjectsOptions{Recursive: true})
		for e := range c.RemoveObjects(ctx, cfg.Bucket, objs, minio.RemoveObjectsOptions{}) {
			t.Logf("remove %s: %v", e.ObjectName, e.Err)
		}
		if err := c.RemoveBucket(ctx, cfg.Bucket); err != nil {
			t.Logf("remove bucket %s: %v", cfg.Bucket, err)
		}
	})
	return cfg
}

// S3Client is a plain minio-go client of bucket's service, for tests that
// write into a bucket behind the store's back.
func S3Client(t testing.TB, bucket blob.S3Config) *minio.Client {
	t.Helper()
	u, err := url.Parse(bucket.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(bucket.AccessKeyID, bucket.SecretAccessKey, ""),
		Secure: u.Scheme == "https", Region: bucket.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
