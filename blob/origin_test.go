package blob_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"lightbox/blob"
)

// A signer's Origin is where the URLs it signs lead, whatever names the
// bucket: a page's content security policy trusts it with uploads.
func TestOriginIsWhereSignedURLsLead(t *testing.T) {
	s3 := func(cfg blob.S3Config) blob.URLSigner {
		cfg.Bucket, cfg.AccessKeyID, cfg.SecretAccessKey, cfg.Region = "photos", "key", "secret", "us-east-1"
		s, err := blob.NewS3(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name   string
		signer blob.URLSigner
		want   string
	}{
		{"disk", blob.NewSigner([]byte("secret"), "https://lightbox.example.org/blobs"), "https://lightbox.example.org"},
		{"bucket in the path", s3(blob.S3Config{Endpoint: "http://127.0.0.1:9000", PathStyle: true}), "http://127.0.0.1:9000"},
		{"bucket in the host", s3(blob.S3Config{Endpoint: "https://s3.example.org"}), "https://photos.s3.example.org"},
		{"public endpoint", s3(blob.S3Config{Endpoint: "http://10.0.0.5:9000", PublicEndpoint: "https://files.example.org:8443", PathStyle: true}),
			"https://files.example.org:8443"},
	} {
		got := c.signer.Origin()
		if got != c.want {
			t.Errorf("%s: origin %q, want %q", c.name, got, c.want)
		}
		grant := blob.Grant{Key: "originals/a/b", ContentType: "image/jpeg", MaxSize: 10, Expires: time.Now().Add(time.Minute)}
		for _, sign := range []func(context.Context, blob.Grant) (blob.SignedURL, error){c.signer.SignGet, c.signer.SignPut} {
			su, err := sign(context.Background(), grant)
			if err != nil {
				t.Fatal(err)
			}
			if u, _ := url.Parse(su.URL); u.Scheme+"://"+u.Host != got {
				t.Errorf("%s: signed %s, outside origin %s", c.name, su.URL, got)
			}
		}
	}
}
