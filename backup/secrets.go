package backup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"filippo.io/age"
)

// Secrets are what a backup holds only when asked, encrypted: the chain's
// signing key and the HMAC key of signed URLs.
type Secrets struct {
	// ChainKey is the signing key as CHAIN_KEY or CHAIN_KEY_FILE hold it
	// (PEM or base64 PKCS#8).
	ChainKey string `json:"chainKey,omitempty"`
	// UploadSecret is UPLOAD_SECRET, or the one kept in DATA_DIR.
	UploadSecret string `json:"uploadSecret,omitempty"`
}

// MinPassphrase is the shortest passphrase secrets are encrypted with:
// the file may sit in a bucket anyone with the backup's credentials reads.
const MinPassphrase = 12

// ErrWrongPassphrase is a passphrase that does not open a backup's secrets.
var ErrWrongPassphrase = errors.New("the passphrase does not open this backup's secrets")

// Secrets' file names when restored, those DATA_DIR holds by default.
const (
	ChainKeyFile     = "chain-ed25519.key"
	UploadSecretFile = "upload-secret"
)

// seal encrypts s with passphrase with age's scrypt recipient.
func seal(s Secrets, passphrase string) ([]byte, error) {
	if len(passphrase) < MinPassphrase {
		return nil, fmt.Errorf("the passphrase must have at least %d characters", MinPassphrase)
	}
	r, err := age.NewScryptRecipient(passphrase)
	if err != nil {
		return nil, err
	}
	plain, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	w, err := age.Encrypt(&out, r)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// open decrypts what seal made.
func open(sealed io.Reader, passphrase string) (*Secrets, error) {
	id, err := age.NewScryptIdentity(passphrase)
	if err != nil {
		return nil, err
	}
	r, err := age.Decrypt(sealed, id)
	if errors.Is(err, age.ErrIncorrectIdentity) {
		return nil, ErrWrongPassphrase
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	plain, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	s := &Secrets{}
	if err := json.Unmarshal(plain, s); err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return s, nil
}

// secretFiles are the files s writes into dir.
func (s *Secrets) files(dir string) map[string]string {
	out := map[string]string{}
	if s.ChainKey != "" {
		out[filepath.Join(dir, ChainKeyFile)] = s.ChainKey + "\n"
	}
	if s.UploadSecret != "" {
		out[filepath.Join(dir, UploadSecretFile)] = s.UploadSecret
	}
	return out
}

// writeSecret writes a file its owner alone reads, never over one there.
func writeSecret(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
