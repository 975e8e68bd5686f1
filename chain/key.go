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

	"lightbox/store"
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

// Keys are the public keys the chain is checked under: the one that signs
// now, and those that signed before a rotation, so that older attestations
// still verify. Each attestation names the key that signed it.
type Keys struct {
	Current ed25519.PublicKey
	Retired []ed25519.PublicKey
}

// NewKeys is the key set of a chain signed now with current, before with
// retired (hex), leaving out repeats and the current key itself.
func NewKeys(current ed25519.PublicKey, retired ...string) (Keys, error) {
	k := Keys{Current: current}
	for _, h := range retired {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != ed25519.PublicKeySize {
			return Keys{}, &Error{Code: CodeInvalidKey, Message: fmt.Sprintf("retired key %q is not an Ed25519 public key in hex", h)}
		}
		if k.find(hex.EncodeToString(b)) == nil {
			k.Retired = append(k.Retired, ed25519.PublicKey(b))
		}
	}
	return k, nil
}

func (k Keys) all() []ed25519.PublicKey {
	return append([]ed25519.PublicKey{k.Current}, k.Retired...)
}

// find is the key whose lower-case hex is h, or nil.
func (k Keys) find(h string) ed25519.PublicKey {
	for _, pub := range k.all() {
		if hex.EncodeToString(pub) == h {
			return pub
		}
	}
	return nil
}

// KeySet is GET /v1/chain/publicKey: the key that signs now, and the
// retired ones older attestations name.
type KeySet struct {
	PublicKey
	Retired []PublicKey `json:"retired"`
}

// Describe presents k.
func (k Keys) Describe() KeySet {
	s := KeySet{PublicKey: DescribePublicKey(k.Current), Retired: []PublicKey{}}
	for _, pub := range k.Retired {
		s.Retired = append(s.Retired, DescribePublicKey(pub))
	}
	return s
}

// signer is the key a row is checked under: the one it names, which must
// be one of k, or, for a row signed before rows named their key, the first
// of k its signature verifies under (verified then reports that it was
// checked already). A row naming a key k does not hold, or naming none that
// verifies, is broken for the Reason returned.
func (k Keys) signer(r *store.AttestationRecord) (pub ed25519.PublicKey, verified bool, reason Reason, msg string) {
	if r.PublicKey != "" {
		if pub := k.find(r.PublicKey); pub != nil {
			return pub, false, "", ""
		}
		return nil, false, ReasonUnknownKey, "signed by a key that is neither the chain's key nor one of its retired keys"
	}
	for _, pub := range k.all() {
		if ed25519.Verify(pub, r.Payload, r.Signature) {
			return pub, true, "", ""
		}
	}
	return nil, false, ReasonBadSignature, "the signature verifies under none of the chain's keys"
}

func keyError(format string, args ...any) error {
	return &Error{Code: CodeInvalidKey, Message: "chain key is " + fmt.Sprintf(format, args...)}
}
