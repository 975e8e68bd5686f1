package blob

import (
	"errors"
	"fmt"
)

// Config says where a process keeps its objects and how their URLs are
// signed.
type Config struct {
	// Backend is "disk" (the default when empty) or "s3".
	Backend string
	// S3 is the s3 backend's bucket.
	S3 S3Config
	// Dir is the disk backend's root folder.
	Dir string
	// Secret is the HMAC key of the disk backend's URLs; every process that
	// signs or checks them must share it.
	Secret []byte
	// BaseURL is where the disk backend's URLs lead: the server's /blobs
	// route, such as "https://photos.example.org/blobs".
	BaseURL string
}

// Open returns the store cfg describes and the signer of its URLs. Callers
// hold only the interfaces, so another backend is one more case here.
// Open does not contact an object store: see S3.EnsureBucket.
func Open(cfg Config) (Store, URLSigner, error) {
	switch cfg.Backend {
	case "", "disk":
	case "s3":
		s, err := NewS3(cfg.S3)
		if err != nil {
			return nil, nil, fmt.Errorf("blob: %w", err)
		}
		return s, s, nil
	default:
		return nil, nil, fmt.Errorf("blob: unknown backend %q", cfg.Backend)
	}
	if len(cfg.Secret) == 0 {
		return nil, nil, errors.New("blob: the disk backend needs a secret to sign its URLs")
	}
	d, err := NewDisk(cfg.Dir)
	if err != nil {
		return nil, nil, fmt.Errorf("blob: %w", err)
	}
	return d, NewSigner(cfg.Secret, cfg.BaseURL), nil
}

// What each backend provides.
var (
	_ Store        = (*Disk)(nil)
	_ StaleRemover = (*Disk)(nil)
	_ Pinger       = (*Disk)(nil)
	_ URLSigner    = (*Signer)(nil)
	_ URLVerifier  = (*Signer)(nil)
	_ Store        = (*S3)(nil)
	_ StaleRemover = (*S3)(nil)
	_ Pinger       = (*S3)(nil)
	_ URLSigner    = (*S3)(nil)
)
