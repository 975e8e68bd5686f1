package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// TestListedDiscardIsNeverNamed has a sweeper whose clock runs ten minutes
// ahead of Postgres's list two discards that Postgres's clock says are not
// due yet. Once listed, the sweeper deletes their files: neither
// FinishExport nor SetWatermarkKey may name one any more, whatever the
// clocks say.
func TestListedDiscardIsNeverNamed(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	st := env.Store
	e, _, run := startedExport(t, env)
	_, project := env.Project(t)
	assets := env.Upload(t, project, testenv.Files(1)...)
	g := galleryOf(t, env, project, "proofs", true, assets...)
	archive, preview := "exports/run", "galleries/run.jpg"
	if err := st.DiscardAfter(ctx, []string{archive, preview}, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	due, err := st.DueDiscards(ctx, time.Now().Add(10*time.Minute), 10)
	if err != nil || !slices.Contains(due, archive) || !slices.Contains(due, preview) {
		t.Fatalf("listed by a fast sweeper: %v, %v", due, err)
	}
	if _, err := st.FinishExport(ctx, e.ID, run, archive, 1, nil); !errors.Is(err, store.ErrDiscardDue) {
		t.Errorf("an export named an archive the sweeper listed for deletion: %v, want ErrDiscardDue", err)
	}
	if err := st.SetWatermarkKey(ctx, g.Gallery.ID, assets[0], preview, proofs); !errors.Is(err, store.ErrDiscardDue) {
		t.Errorf("a gallery named a preview the sweeper listed for deletion: %v, want ErrDiscardDue", err)
	}
}
