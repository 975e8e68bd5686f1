package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/jobs"
	"lightbox/testsupport/testenv"
)

// TestMarkOutlastsRememberedAnswers: a worker that saw a project unmarked
// just before it was marked sees the mark by the time any cancel can
// follow, whether the canceler set the mark or found it newly set by
// another still waiting for it to settle.
func TestMarkOutlastsRememberedAnswers(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ctx := context.Background()

	for _, second := range []bool{false, true} {
		project := uuid.New()
		marks := jobs.NewCancelMarks(env.Redis)
		if marked, err := marks.MayBeCanceled(ctx, project); err != nil || marked {
			t.Fatalf("an unmarked project: marked %v, %v", marked, err)
		}
		first := make(chan error, 1)
		go func() { first <- jobs.MarkCanceling(ctx, env.Redis, project) }()
		if second {
			// Another canceler comes once the first has set the mark, well
			// before the first has waited out its settling.
			testenv.EventuallyEvery(t, "the first mark", 2*time.Minute, time.Millisecond, func() bool {
				ok, err := jobs.MayBeCanceled(ctx, env.Redis, project)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			})
			if err := jobs.MarkCanceling(ctx, env.Redis, project); err != nil {
				t.Fatal(err)
			}
		} else if err := <-first; err != nil {
			t.Fatal(err)
		}
		if marked, err := marks.MayBeCanceled(ctx, project); err != nil || !marked {
			t.Errorf("second canceler %v: once marking returned, the worker still saw the project unmarked (%v)", second, err)
		}
		if second {
			if err := <-first; err != nil {
				t.Fatal(err)
			}
		}
	}
}
