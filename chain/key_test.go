package chain_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lightbox/chain"
)

func TestGenerateKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "chain.key")
	created, err := chain.GenerateKeyFile(path)
	if err != nil || !created {
		t.Fatalf("GenerateKeyFile = %v, %v; want a new file", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	first, _ := os.ReadFile(path)
	if block, _ := pem.Decode(first); block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("key file is not a PEM PRIVATE KEY:\n%s", first)
	}
	key, err := chain.LoadKey(path)
	if err != nil {
		t.Fatal(err)
	}

	// A second call leaves the key alone.
	created, err = chain.GenerateKeyFile(path)
	if err != nil || created {
		t.Fatalf("second GenerateKeyFile = %v, %v; want nothing done", created, err)
	}
	again, _ := os.ReadFile(path)
	if !bytes.Equal(first, again) {
		t.Fatal("second GenerateKeyFile replaced the key")
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("key directory holds %d files, want only the key", len(entries))
	}

	// The same key travels as one base64 line of PKCS#8 DER.
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	fromEnv, err := chain.ParseKey([]byte(base64.StdEncoding.EncodeToString(der) + "\n"))
	if err != nil || !fromEnv.Equal(key) {
		t.Fatalf("ParseKey(base64 DER) = %v; want the same key", err)
	}
}

func TestGenerateKeyFileConcurrentStartsMakeOneKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chain.key")
	var wg sync.WaitGroup
	made := make([]bool, 8)
	for i := range made {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if made[i], err = chain.GenerateKeyFile(path); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	n := 0
	for _, m := range made {
		if m {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d calls report creating the key, want 1", n)
	}
	if _, err := chain.LoadKey(path); err != nil {
		t.Fatal(err)
	}
}

func TestParseKeyRejects(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	cases := map[string][]byte{
		"empty":          nil,
		"garbage":        []byte("not a key"),
		"public key PEM": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2, 3}}),
		"ecdsa key":      pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}),
		"raw seed":       []byte(base64.StdEncoding.EncodeToString(edKey.Seed())),
	}
	for name, in := range cases {
		_, err := chain.ParseKey(in)
		var ce *chain.Error
		if !errors.As(err, &ce) || ce.Code != chain.CodeInvalidKey {
			t.Errorf("%s: ParseKey error %v, want code invalid_key", name, err)
		}
	}
	_, err := chain.LoadKey(filepath.Join(t.TempDir(), "missing.key"))
	var ce *chain.Error
	if !errors.As(err, &ce) || ce.Code != chain.CodeInvalidKey {
		t.Errorf("LoadKey of a missing file: %v, want code invalid_key", err)
	}
}

func TestDescribePublicKey(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	d := chain.DescribePublicKey(pub)
	if d.Algorithm != "Ed25519" || d.Hex != hex.EncodeToString(pub) {
		t.Fatalf("described as %+v", d)
	}
	block, _ := pem.Decode([]byte(d.PEM))
	if block == nil || block.Type != "PUBLIC KEY" {
		t.Fatalf("PEM = %q", d.PEM)
	}
	back, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil || !pub.Equal(back) {
		t.Fatalf("PEM does not hold the key: %v", err)
	}
}

func TestNewKeys(t *testing.T) {
	cur, _, _ := ed25519.GenerateKey(rand.Reader)
	old, _, _ := ed25519.GenerateKey(rand.Reader)
	h := hex.EncodeToString(old)
	k, err := chain.NewKeys(cur, h, strings.ToUpper(h), hex.EncodeToString(cur))
	if err != nil {
		t.Fatal(err)
	}
	if !k.Current.Equal(cur) || len(k.Retired) != 1 || !k.Retired[0].Equal(old) {
		t.Fatalf("keys = %+v, want the current key and the old one once", k)
	}
	d := k.Describe()
	if d.Hex != hex.EncodeToString(cur) || len(d.Retired) != 1 || d.Retired[0].Hex != h {
		t.Fatalf("described as %+v", d)
	}
	for _, bad := range []string{"xyz", h[:62], h + "00"} {
		_, err := chain.NewKeys(cur, bad)
		var ce *chain.Error
		if !errors.As(err, &ce) || ce.Code != chain.CodeInvalidKey {
			t.Errorf("NewKeys(%q): %v, want code invalid_key", bad, err)
		}
	}
}
