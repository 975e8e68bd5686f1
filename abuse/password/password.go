// Package password provides slow, salted password hashes (argon2id) in
// the PHC string format, which carries its own parameters, so hashes made
// with other parameters still verify.
package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// The parameters of new hashes: RFC 9106's second recommended option
// (64 MiB, three passes), on one lane. More lanes would not cost a guesser
// more, and each runs on a core of its own: one lane leaves the others
// to the rest of the server while a hash runs. Hashes made with two lanes
// before still verify, on two cores.
const (
	memoryKiB = 64 * 1024
	passes    = 3
	lanes     = 1
	saltLen   = 16
	keyLen    = 32
)

// ErrMalformed says a stored hash is not one this package made.
var ErrMalformed = errors.New("password: malformed hash")

var b64 = base64.RawStdEncoding

// Hash returns an argon2id hash of pw with a new random salt:
// $argon2id$v=19$m=65536,t=3,p=1$<salt>$<key>.
func Hash(pw string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(pw), salt, passes, memoryKiB, lanes, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, memoryKiB, passes, lanes,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify reports whether pw matches hash, comparing in constant time.
func Verify(hash, pw string) (bool, error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return false, ErrMalformed
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, ErrMalformed
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m == 0 || t == 0 || p == 0 {
		return false, ErrMalformed
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, ErrMalformed
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, ErrMalformed
	}
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
