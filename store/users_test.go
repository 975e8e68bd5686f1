package store_test

import (
	"context"
	"testing"
	"time"

	"lightbox/testsupport/testenv"
)

// A key's last use is recorded at most once a minute, so a busy client does
// not turn every request into a row update.
func TestKeyLastUseIsWrittenAtMostOnceAMinute(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	user, err := env.Store.CreateUser(ctx, "ana@example.org", false)
	if err != nil {
		t.Fatal(err)
	}
	secret, key, err := env.Store.CreateAPIKey(ctx, user.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	lastUse := func() (at *time.Time, xmin string) {
		t.Helper()
		var row struct {
			At   *time.Time `db:"last_used_at"`
			Xmin string     `db:"xmin"`
		}
		if err := env.DB.Get(&row, `SELECT last_used_at, xmin::text AS xmin FROM api_keys WHERE id = $1`, key.ID); err != nil {
			t.Fatal(err)
		}
		return row.At, row.Xmin
	}
	resolve := func() {
		t.Helper()
		if p, err := env.Store.PrincipalByAPIKey(ctx, secret); err != nil || p.ID != user.ID || p.KeyID != key.ID {
			t.Fatalf("PrincipalByAPIKey = %+v, %v", p, err)
		}
	}

	resolve()
	first, version := lastUse()
	if first == nil {
		t.Fatal("the first use was not recorded")
	}
	for range 5 {
		resolve()
	}
	if at, v := lastUse(); !at.Equal(*first) || v != version {
		t.Fatalf("last use rewritten within the minute: %v (row version %s, was %s)", at, v, version)
	}
	env.Age(t, "api_keys", "last_used_at", 2*time.Minute, "id = $1", key.ID)
	resolve()
	if at, _ := lastUse(); at.Before(first.Add(-time.Second)) {
		t.Fatalf("last use not recorded after a minute: %v", at)
	}
	if _, err := env.Store.PrincipalByAPIKey(ctx, "lbx_unknown"); err == nil {
		t.Fatal("an unknown key resolved")
	}
}
