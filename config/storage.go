package config

import (
	"errors"

	"lightbox/blob"
)

// Storage is where the bytes live and the secrets every process sharing
// them must agree on.
type Storage struct {
	BlobBackend       string // BLOB_BACKEND: disk (below DATA_DIR, the default) or s3
	S3Endpoint        string // S3_ENDPOINT, the service's base URL, such as https://s3.eu-west-1.amazonaws.com
	S3Region          string // S3_REGION
	S3Bucket          string // S3_BUCKET
	S3AccessKeyID     string // S3_ACCESS_KEY_ID
	S3SecretAccessKey string // S3_SECRET_ACCESS_KEY
	S3ForcePathStyle  bool   // S3_FORCE_PATH_STYLE, the bucket in the path, as most self-hosted servers need
	S3PublicEndpoint  string // S3_PUBLIC_ENDPOINT, where browsers reach the service when not at S3_ENDPOINT

	// ChainKey is CHAIN_KEY, the chain's signing key itself; when empty it
	// is read from CHAIN_KEY_FILE.
	ChainKey string
}

// storage reads BLOB_BACKEND, the S3_* settings and CHAIN_KEY into c.
// Processes that share no DATA_DIR cannot invent their own secrets, so
// beyond the disk backend the upload secret and the chain key must be given.
func (r *reader) storage(c *Config) {
	c.BlobBackend = r.oneOf("BLOB_BACKEND", "disk", "disk", "s3")
	c.ChainKey = r.str("CHAIN_KEY", "")
	if c.BlobBackend != "s3" {
		return
	}
	r.bucket(&c.Storage)
	if c.UploadSecret == "" {
		r.fail("UPLOAD_SECRET", "is required with BLOB_BACKEND=s3 (or UPLOAD_SECRET_FILE): every server and worker must share it")
	}
	if _, ok := r.lookup("CHAIN_KEY_FILE"); !ok && c.ChainKey == "" {
		r.fail("CHAIN_KEY", "is required with BLOB_BACKEND=s3 (or CHAIN_KEY_FILE): every server and worker must share it")
	}
}

// S3FromLookup reads only the S3_* settings, whatever BLOB_BACKEND says:
// for moving blobs into the bucket an install is about to switch to.
func S3FromLookup(lookup func(string) (string, bool)) (Storage, error) {
	r := reader{lookup: lookup}
	s := Storage{BlobBackend: "s3"}
	r.bucket(&s)
	return s, errors.Join(r.errs...)
}

// bucket reads the S3_* settings into s, all required but the region,
// the path style and the public endpoint.
func (r *reader) bucket(s *Storage) {
	s.S3Endpoint = r.str("S3_ENDPOINT", "")
	s.S3Region = r.str("S3_REGION", "us-east-1")
	s.S3Bucket = r.str("S3_BUCKET", "")
	s.S3AccessKeyID = r.str("S3_ACCESS_KEY_ID", "")
	s.S3SecretAccessKey = r.str("S3_SECRET_ACCESS_KEY", "")
	s.S3ForcePathStyle = r.boolean("S3_FORCE_PATH_STYLE", false)
	s.S3PublicEndpoint = r.str("S3_PUBLIC_ENDPOINT", "")
	if s.S3PublicEndpoint != "" {
		r.check("S3_PUBLIC_ENDPOINT", s.S3PublicEndpoint, func(v string) error { return checkURL(v, "http", "https") })
	}
	if s.S3Endpoint == "" {
		r.fail("S3_ENDPOINT", "is required with BLOB_BACKEND=s3")
	} else {
		r.check("S3_ENDPOINT", s.S3Endpoint, func(v string) error { return checkURL(v, "http", "https") })
	}
	for _, v := range []struct{ name, v string }{
		{"S3_BUCKET", s.S3Bucket}, {"S3_ACCESS_KEY_ID", s.S3AccessKeyID}, {"S3_SECRET_ACCESS_KEY", s.S3SecretAccessKey},
	} {
		if v.v == "" {
			r.fail(v.name, "is required with BLOB_BACKEND=s3")
		}
	}
}

// S3Config is s as the blob store takes it.
func (s Storage) S3Config() blob.S3Config {
	return blob.S3Config{Endpoint: s.S3Endpoint, Region: s.S3Region, Bucket: s.S3Bucket, AccessKeyID: s.S3AccessKeyID,
		SecretAccessKey: s.S3SecretAccessKey, PathStyle: s.S3ForcePathStyle, PublicEndpoint: s.S3PublicEndpoint}
}
