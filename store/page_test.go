package store_test

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

func TestCursorRoundTrip(t *testing.T) {
	c := store.Cursor{Time: time.Date(2024, 5, 1, 12, 0, 0, 123456000, time.UTC), ID: uuid.New()}
	got, err := store.DecodeCursor(c.Encode())
	if err != nil || !got.Time.Equal(c.Time) || got.ID != c.ID {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, c)
	}
	// A cursor of another order carries its name and its key, whatever
	// the key holds.
	k := store.Cursor{ID: uuid.New(), Order: "filename.desc", Key: "a|b|c.jpg"}
	if got, err := store.DecodeCursor(k.Encode()); err != nil || *got != k {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, k)
	}
	if got, err := store.DecodeCursor(""); got != nil || err != nil {
		t.Fatalf("empty cursor = %+v, %v; want the first page", got, err)
	}
	farOffset := base64.RawURLEncoding.EncodeToString([]byte("2020-01-01T00:00:00-23:59|" + c.ID.String()))
	noOrder := base64.RawURLEncoding.EncodeToString([]byte("2020-01-01T00:00:00Z|" + c.ID.String() + "||key"))
	for _, bad := range []string{"!!", "bm8tc2VwYXJhdG9y", "eHx5", farOffset, noOrder} {
		if _, err := store.DecodeCursor(bad); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("DecodeCursor(%q) = %v, want ErrBadCursor", bad, err)
		}
	}
}

// Walking the pages sees every row once, in order, even when rows share a
// creation time and new rows arrive between pages.
func TestPagesVisitEveryRowOnce(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	// One finalize: seven assets and jobs with the same created_at.
	env.Finalize(t, owner, project, testenv.Files(7)...)

	var assets []uuid.UUID
	var after *store.Cursor
	for pages := 0; ; pages++ {
		p, err := env.Store.Assets(ctx, project, store.AssetFilter{}, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range p.Items {
			assets = append(assets, a.ID)
		}
		if pages == 0 {
			// A row added during the walk is reached too.
			env.Upload(t, project, testenv.Upload{Data: []byte("late")})
		}
		if p.Next == nil {
			break
		}
		next, err := store.DecodeCursor(p.Next.Encode())
		if err != nil {
			t.Fatal(err)
		}
		after = next
	}
	if len(assets) != 8 || !unique(assets) {
		t.Fatalf("walked %d assets (%v), want 8 distinct", len(assets), assets)
	}

	// Jobs, newest first, by the same rule.
	var jobs []uuid.UUID
	after = nil
	for {
		p, err := env.Store.Jobs(ctx, project, store.JobFilter{}, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range p.Items {
			jobs = append(jobs, j.ID)
		}
		if p.Next == nil {
			break
		}
		after = p.Next
	}
	if len(jobs) != 7 || !unique(jobs) {
		t.Fatalf("walked %d jobs, want 7 distinct", len(jobs))
	}
	if p, _ := env.Store.Jobs(ctx, project, store.JobFilter{Status: store.JobDone}, nil, 10); len(p.Items) != 0 || p.Items == nil {
		t.Fatalf("filtered page %+v, want an empty list", p)
	}
}

func unique(ids []uuid.UUID) bool {
	seen := map[uuid.UUID]bool{}
	for _, id := range ids {
		if seen[id] {
			return false
		}
		seen[id] = true
	}
	return true
}
