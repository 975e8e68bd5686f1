package boot_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"

	"lightbox/cmd/boot"
	"lightbox/config"
)

// TestChainKeyByValue: CHAIN_KEY is the key itself, so processes on
// separate machines share it without a shared file.
func TestChainKeyByValue(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	got, err := boot.ChainKey(&config.Config{Storage: config.Storage{ChainKey: base64.StdEncoding.EncodeToString(der)},
		ChainKeyFile: "/nonexistent"})
	if err != nil || !got.Equal(key) {
		t.Fatalf("key %v, %v", got, err)
	}
	if _, err := boot.ChainKey(&config.Config{Storage: config.Storage{ChainKey: "not a key"}}); err == nil || !strings.Contains(err.Error(), "CHAIN_KEY:") {
		t.Fatalf("a bad CHAIN_KEY: %v", err)
	}
}
