package password_test

import (
	"strings"
	"testing"

	"lightbox/abuse/password"
)

func TestHashAndVerify(t *testing.T) {
	h, err := password.Hash("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=65536,t=3,p=1$") {
		t.Fatalf("hash %q does not carry its parameters", h)
	}
	if again, _ := password.Hash("correct horse"); again == h {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	for pw, want := range map[string]bool{"correct horse": true, "correct horse ": false, "": false} {
		if ok, err := password.Verify(h, pw); err != nil || ok != want {
			t.Errorf("Verify(%q) = %v, %v; want %v", pw, ok, err, want)
		}
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=1,t=1,p=1$c2FsdA$a2V5", "$argon2id$v=19$m=0,t=1,p=1$c2FsdA$a2V5",
		"$argon2id$v=19$m=8,t=1,p=1$!!$a2V5"} {
		if _, err := password.Verify(bad, "x"); err == nil {
			t.Errorf("Verify accepted the malformed hash %q", bad)
		}
	}
}

// BenchmarkHash is what one gallery password check costs (Verify does the
// same work). Baseline: about 380 ms and 64 MiB, on one core (one lane).
func BenchmarkHash(b *testing.B) {
	for b.Loop() {
		if _, err := password.Hash("correct horse"); err != nil {
			b.Fatal(err)
		}
	}
}
