package testenv_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// fatal stands in for a test's t to see what a helper fails it with.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}

func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs fn with a stand-in t and returns what it failed with.
func failure(t *testing.T, fn func(t testing.TB)) string {
	f := &fatal{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msg
}

func TestAgeMovesAColumnBackAndRefusesToAgeNothing(t *testing.T) {
	env := testenv.New(t)
	owner, project := env.Project(t)
	env.Age(t, "projects", "created_at", time.Hour, "id = $1", project)
	p, err := env.Store.Project(context.Background(), owner, project)
	if err != nil {
		t.Fatal(err)
	}
	if age := time.Since(p.CreatedAt); age < 59*time.Minute || age > 61*time.Minute {
		t.Fatalf("created %v ago, want an hour", age)
	}
	if msg := failure(t, func(t testing.TB) {
		env.Age(t, "projects", "created_at", time.Hour, "id = $1", uuid.New())
	}); msg == "" {
		t.Fatal("ageing no row passed")
	}
}

func TestAssetsInReachesEachStatus(t *testing.T) {
	env := testenv.New(t)
	owner, project := env.Project(t)
	want := []string{store.AssetUploaded, store.AssetCull, store.AssetSearch, store.AssetAI, store.AssetFailed}
	ids := env.AssetsIn(t, owner, project, want...)
	for i, id := range ids {
		if got := env.AssetStatus(t, id); got != want[i] {
			t.Errorf("asset %d is %s, want %s", i, got, want[i])
		}
	}
	if msg := failure(t, func(t testing.TB) { env.AssetsIn(t, owner, project, "polished") }); msg == "" {
		t.Fatal("a status no builder makes passed")
	}
}
