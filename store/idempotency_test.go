package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

func TestIdempotencyKeys(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, _ := env.Project(t)
	other, _ := env.Project(t)
	hash := []byte("request one")
	claim := func(user uuid.UUID, key string, hash []byte) (*store.SavedResponse, error) {
		return env.Store.ClaimIdempotencyKey(ctx, user, key, "POST", "/v1/projects", hash)
	}

	if saved, err := claim(owner, "k1", hash); saved != nil || err != nil {
		t.Fatalf("first claim = %+v, %v; want go ahead", saved, err)
	}
	// While the first request runs, a repeat waits its turn.
	if _, err := claim(owner, "k1", hash); !errors.Is(err, store.ErrIdempotencyInFlight) {
		t.Fatalf("claim during the first request: %v", err)
	}
	answer := store.SavedResponse{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"id":"p"}`)}
	if err := env.Store.SaveIdempotentResponse(ctx, owner, "k1", answer); err != nil {
		t.Fatal(err)
	}
	saved, err := claim(owner, "k1", hash)
	if err != nil || saved == nil || saved.StatusCode != 201 || string(saved.Body) != `{"id":"p"}` || saved.ContentType != "application/json" {
		t.Fatalf("replay = %+v, %v", saved, err)
	}
	if _, err := claim(owner, "k1", []byte("another body")); !errors.Is(err, store.ErrIdempotencyReused) {
		t.Fatalf("same key, other body: %v", err)
	}
	if _, err := env.Store.ClaimIdempotencyKey(ctx, owner, "k1", "POST", "/v1/other", hash); !errors.Is(err, store.ErrIdempotencyReused) {
		t.Fatalf("same key, other path: %v", err)
	}
	// Keys are per user.
	if saved, err := claim(other, "k1", hash); saved != nil || err != nil {
		t.Fatalf("another user's claim = %+v, %v", saved, err)
	}

	// A released claim may be taken again; an answered one is not released.
	if _, err := claim(owner, "k2", hash); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.ReleaseIdempotencyKey(ctx, owner, "k2"); err != nil {
		t.Fatal(err)
	}
	if saved, err := claim(owner, "k2", hash); saved != nil || err != nil {
		t.Fatalf("claim after release = %+v, %v", saved, err)
	}
	if err := env.Store.ReleaseIdempotencyKey(ctx, owner, "k1"); err != nil {
		t.Fatal(err)
	}
	if saved, _ := claim(owner, "k1", hash); saved == nil {
		t.Fatal("releasing an answered key forgot its answer")
	}
}

// A request whose process died before it answered leaves its claim; a
// retry with the same key must not wait out the whole window for it.
func TestAbandonedIdempotencyClaimIsTakenOver(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, _ := env.Project(t)
	claim := func() (*store.SavedResponse, error) {
		return env.Store.ClaimIdempotencyKey(ctx, owner, "k", "POST", "/v1/projects", []byte("body"))
	}
	if _, err := claim(); err != nil {
		t.Fatal(err)
	}
	// Not long after, the claim still stands: its request may be running.
	env.Age(t, "idempotency_keys", "created_at", store.IdempotencyClaimStale-time.Minute, "")
	if _, err := claim(); !errors.Is(err, store.ErrIdempotencyInFlight) {
		t.Fatalf("claim beside a running request: %v, want in flight", err)
	}
	env.Age(t, "idempotency_keys", "created_at", store.IdempotencyClaimStale+time.Minute, "")
	if saved, err := claim(); saved != nil || err != nil {
		t.Fatalf("claim after the first was abandoned = %+v, %v; want go ahead", saved, err)
	}
	// An answer is kept the whole window, however old its claim.
	if err := env.Store.SaveIdempotentResponse(ctx, owner, "k", store.SavedResponse{StatusCode: 201, ContentType: "application/json", Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	env.Age(t, "idempotency_keys", "created_at", store.IdempotencyClaimStale+time.Hour, "")
	if saved, err := claim(); err != nil || saved == nil || saved.StatusCode != 201 {
		t.Fatalf("replay of an old answer = %+v, %v", saved, err)
	}
}
