package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lightbox/config"
)

func TestS3NeedsEverySettingAndSharedSecrets(t *testing.T) {
	_, err := config.FromLookup(lookup(map[string]string{"BLOB_BACKEND": "s3"}))
	if err == nil {
		t.Fatal("BLOB_BACKEND=s3 loaded without its settings")
	}
	for _, name := range []string{"S3_ENDPOINT", "S3_BUCKET", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "UPLOAD_SECRET", "CHAIN_KEY"} {
		if !strings.Contains(err.Error(), name+":") {
			t.Errorf("no word of %s in:\n%v", name, err)
		}
	}

	secret := filepath.Join(t.TempDir(), "upload-secret")
	os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef\n"), 0o600)
	c, err := config.FromLookup(lookup(map[string]string{
		"BLOB_BACKEND": "s3", "S3_ENDPOINT": "http://127.0.0.1:7070", "S3_BUCKET": "photos",
		"S3_ACCESS_KEY_ID": "id", "S3_SECRET_ACCESS_KEY": "secret", "S3_FORCE_PATH_STYLE": "true",
		"UPLOAD_SECRET_FILE": secret, "CHAIN_KEY_FILE": "/run/secrets/chain-key",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.UploadSecret != "0123456789abcdef0123456789abcdef" || !c.S3ForcePathStyle || c.S3Region != "us-east-1" || c.S3Bucket != "photos" {
		t.Fatalf("config %+v", c.Storage)
	}

	_, err = config.FromLookup(lookup(map[string]string{"UPLOAD_SECRET_FILE": filepath.Join(t.TempDir(), "none")}))
	if err == nil || !strings.Contains(err.Error(), "UPLOAD_SECRET_FILE:") {
		t.Fatalf("a missing secret file: %v", err)
	}
	if c, err := config.FromLookup(lookup(nil)); err != nil || c.BlobBackend != "disk" {
		t.Fatalf("default backend %q, %v", c.BlobBackend, err)
	}
}
