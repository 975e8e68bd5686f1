package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"lightbox/blob"
	"lightbox/testsupport/testenv"
)

// BenchmarkS3Upload PUTs the same real photos with 8 concurrent clients
// three ways in one run: to the local S3 server on the presigned URLs
// prepare hands out, to the disk backend on its signed URLs, and with
// plain minio-go PutObject calls from Go into the same bucket (the
// baseline: no API, no browser's headers). Each API upload is then
// finalized in chunks of 100; on S3 that reads and hashes every object.
func BenchmarkS3Upload(b *testing.B) {
	const files, clients = 1000, 8
	photos := distinctPhotos(b, files)
	mb := megabytes(photos)
	limits := map[string]string{"RATE_UPLOADS_BURST": "100000", "RATE_API_BURST": "100000"}

	for range b.N {
		bucket := testenv.S3(b)
		onS3, _ := s3AppOn(b, bucket, limits)
		env := testenv.New(b)
		onDisk := startAppWith(b, env, env.Redis, options{env: limits})

		s3 := benchUpload(b, onS3, photos, clients, http.StatusOK)
		disk := benchUpload(b, onDisk, photos, clients, http.StatusCreated)
		plainSecs := benchPutObject(b, bucket, photos, clients)

		b.ReportMetric(mb/s3.putSecs, "s3_put_MB/s")
		b.ReportMetric(mb/disk.putSecs, "disk_put_MB/s")
		b.ReportMetric(mb/plainSecs, "putobject_MB/s")
		b.ReportMetric(plainSecs/s3.putSecs, "s3/putobject")
		b.ReportMetric(disk.putSecs/s3.putSecs, "s3/disk")
		b.ReportMetric(ms(percentile(s3.finalize, 50)), "s3_finalize100_p50_ms")
		b.ReportMetric(ms(percentile(s3.finalize, 99)), "s3_finalize100_p99_ms")
		b.ReportMetric(ms(percentile(disk.finalize, 99)), "disk_finalize100_p99_ms")
	}
}

// benchPutObject writes photos into bucket with minio-go's PutObject from
// clients goroutines and returns the seconds it took.
func benchPutObject(b *testing.B, bucket blob.S3Config, photos []photo, clients int) float64 {
	c := testenv.S3Client(b, bucket)
	ctx := context.Background()
	start := time.Now()
	parallel(b, clients, len(photos), func(i int) error {
		_, err := c.PutObject(ctx, bucket.Bucket, fmt.Sprintf("plain/%04d", i), bytes.NewReader(photos[i].data),
			int64(len(photos[i].data)), minio.PutObjectOptions{ContentType: "image/jpeg"})
		return err
	})
	return time.Since(start).Seconds()
}
