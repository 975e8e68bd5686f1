package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// guesses records the codes a sign-in counts, and refuses them while
// refuse is set.
type guesses struct {
	taken, forgiven []string
	refuse          error
}

func (g *guesses) Take(_ context.Context, mailbox string) error {
	g.taken = append(g.taken, mailbox)
	return g.refuse
}

func (g *guesses) Forgive(_ context.Context, mailbox string) {
	g.forgiven = append(g.forgiven, mailbox)
}

// codeOf is the code a sign-in mail carries, at the end of its subject.
func codeOf(t *testing.T, subject string) string {
	t.Helper()
	_, code, ok := strings.Cut(subject, ": ")
	if !ok || len(code) != 6 {
		t.Fatalf("no code in %q", subject)
	}
	return code
}

// A code is counted before it is checked: a refused count checks nothing,
// a wrong code stays counted, a right one is taken back, and a spent
// challenge counts nothing, as no code is tried. An address no user has
// gets a challenge and no mail.
func TestSignInCountsEachCodeTried(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	a := newApp(t, env, 0)
	if _, err := env.Store.CreateUser(ctx, "ana@example.org", false); err != nil {
		t.Fatal(err)
	}
	if id, m, err := a.StartSignIn(ctx, "nobody@example.org"); err != nil || id == uuid.Nil || m != nil {
		t.Fatalf("unknown address: %v, %+v, %v; want a challenge and no mail", id, m, err)
	}
	id, m, err := a.StartSignIn(ctx, "ana@example.org")
	if err != nil || m == nil || m.To != "ana@example.org" {
		t.Fatalf("start: %+v, %v", m, err)
	}
	code := codeOf(t, m.Subject)
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	g := &guesses{refuse: errors.New("slow down")}
	if _, _, err := a.FinishSignIn(ctx, g, id, code); !errors.Is(err, g.refuse) {
		t.Fatalf("refused count: %v, want its refusal", err)
	}
	g.refuse = nil
	if _, _, err := a.FinishSignIn(ctx, g, id, wrong); !errors.Is(err, store.ErrWrongCode) {
		t.Fatalf("wrong code: %v", err)
	}
	p, tokens, err := a.FinishSignIn(ctx, g, id, code)
	if err != nil || p.Email != "ana@example.org" || !strings.HasPrefix(tokens.Access, store.AccessPrefix) {
		t.Fatalf("right code after a refused count and a wrong one: %+v, %+v, %v", p, tokens, err)
	}
	if _, _, err := a.FinishSignIn(ctx, g, id, code); !errors.Is(err, store.ErrCodeExpired) {
		t.Fatalf("used code: %v", err)
	}
	if len(g.taken) != 3 || len(g.forgiven) != 1 || g.forgiven[0] != "ana@example.org" {
		t.Fatalf("taken %v, forgiven %v; want 3 taken (refused, wrong, right) and the right one forgiven", g.taken, g.forgiven)
	}
}
