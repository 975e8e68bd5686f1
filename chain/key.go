package chain

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The signing key is an Ed25519 private key in PKCS#8, written as PEM
// ("-----BEGIN PRIVATE KEY-----"), the form `openssl genpkey -algorithm
// ed25519` produces. Where a single line is handier (an environment
// variable), ParseKey also takes the PKCS#8 DER in standard base64.

// ParseKey reads an Ed25519 private key from PEM PKCS#8 or base64 PKCS#8 DER.
func ParseKey(b []byte) (ed25519.PrivateKey, error) {
	b = bytes.TrimSpace(b)
	var der []byte
	if block, _ := pem.Decode(b); block != nil {
		if block.Type != "PRIVATE KEY" {
			return nil, keyError("a PEM block of type %q, not PRIVATE KEY (PKCS#8)", block.Type)
		}
		der = block.Bytes
	} else {
		var err error
		if der, err = base64.StdEncoding.DecodeString(string(b)); err != nil {
			return nil, keyError("neither PEM nor base64")
		}
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, keyError("not PKCS#8: %v", err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, keyError("a %T, not an Ed25519 key", k)
	}
	return ek, nil
}

// LoadKey reads the key file at path.
func LoadKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{Code: CodeInvalidKey, Message: fmt.Sprintf("chain key: %v", err)}
	}
	k, err := ParseKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// GenerateKeyFile writes a new key to path, readable by its owner only, and
// reports true; when path exists it does nothing and reports false. The file
// appears whole or not at all, and two concurrent calls leave one key.
func GenerateKeyFile(path string) (bool, error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return false, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(dir, ".chain-key-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return false, err
	}
	if err := pem.Encode(tmp, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	// A hard link never replaces an existing file, unlike rename.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// PublicKey is the chain's verifying key as the API shows it.
type PublicKey struct {
	Algorithm string `json:"algorithm"` // "Ed25519"
	Hex       string `json:"hex"`       // the 32 raw bytes in hex
	PEM       string `json:"pem"`       // SubjectPublicKeyInfo, "-----BEGIN PUBLIC KEY-----"
}

// DescribePublicKey presents pub in hex and PEM.
func DescribePublicKey(pub ed25519.PublicKey) PublicKey {
	der, _ := x509.MarshalPKIXPublicKey(pub) // cannot fail for an Ed25519 key
	return PublicKey{
		Algorithm: "Ed25519",
		Hex:       hex.EncodeToString(pub),
		PEM:       string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})),
	}
}

func keyError(format string, args ...any) error {
	return &Error{Code: CodeInvalidKey, Message: "chain key is " + fmt.Sprintf(format, args...)}
}
