package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"

	"lightbox/blob"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// finalizeBatch records n uploaded copies of data in owner's project as
// one batch, as one finalize call does, and hands its jobs to the queue
// as the API does: as far as the queue caps allow. It returns the batch.
func (h *harness) finalizeBatch(owner, project uuid.UUID, data []byte, n int) uuid.UUID {
	h.t.Helper()
	ctx := context.Background()
	uploads := make([]testenv.Upload, n)
	for i := range n {
		body := append(bytes.Clone(data), []byte(fmt.Sprintf("%s %d", uuid.NewString(), i))...)
		id := uuid.New()
		key := blob.OriginalKey(project, id)
		if _, err := h.blobs.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
			h.t.Fatal(err)
		}
		uploads[i] = testenv.Upload{ID: id, Filename: fmt.Sprintf("%d.jpg", i), Data: body, BlobKey: key}
	}
	res := h.env.Finalize(h.t, owner, project, uploads...)
	d := jobs.New(jobs.Config{Store: h.env.Store, Queue: h.queue, Inspector: h.in,
		Caps: store.QueueCaps{Batch: h.cfg.BatchWindow, User: h.cfg.UserWindow}})
	recorded, err := h.env.Store.BatchJobs(ctx, *res.BatchID)
	if err != nil {
		h.t.Fatal(err)
	}
	d.Enqueue(ctx, slog.Default(), recorded)
	return *res.BatchID
}

// smallBehindBig runs a 5-photo batch started after a batch of size
// photos and returns how many of the big batch's jobs were done between
// the small one's enqueue and its completion: how many it waited for,
// however far the big one had got when it came.
func smallBehindBig(t testing.TB, window string, size int) (ahead int, small time.Duration) {
	h := newHarness(t, map[string]string{"BATCH_WINDOW": window, "USER_WINDOW": "0", "CLUSTER_DELAY": "1h"})
	project := h.project()
	photo := readCorpus(t, "odd/orientation-1.jpg")
	big := h.finalizeBatch(h.owner, project, photo, size)
	start := time.Now()
	h.run()
	testenv.Eventually(h.t, "the big batch to be under way", patience, func() bool {
		return h.count(`SELECT completed FROM batches WHERE id = $1`, big) > 0
	})
	late := h.finalizeBatch(h.owner, project, photo, 5)
	before := h.count(`SELECT completed FROM batches WHERE id = $1`, big)
	testenv.Eventually(h.t, "the small batch to complete", patience, func() bool {
		return h.count(`SELECT count(*) FROM batches WHERE id = $1 AND status = 'completed'`, late) == 1
	})
	small = time.Since(start)
	ahead = h.count(`SELECT completed FROM batches WHERE id = $1`, big) - before
	testenv.Eventually(h.t, "the big batch to complete", patience, func() bool {
		return h.count(`SELECT count(*) FROM batches WHERE id = $1 AND status = 'completed'`, big) == 1
	})
	return ahead, small
}

// BenchmarkBatchFairness measures how long a 5-photo batch started after
// a 200-photo one takes to complete, with BATCH_WINDOW=16 and, as the
// baseline in the same run, without a batch cap.
func BenchmarkBatchFairness(b *testing.B) { benchFairness(b, smallBehindBig, 200) }

// benchFairness reports how long run's small batch took and how many of
// its big upload it waited for, with a batch cap of 16 and without.
func benchFairness(b *testing.B, run func(testing.TB, string, int) (int, time.Duration), size int) {
	for range b.N {
		done, took := run(b, "16", size)
		baseDone, baseTook := run(b, "0", size)
		b.ReportMetric(took.Seconds(), "s_small_batch_windowed")
		b.ReportMetric(baseTook.Seconds(), "s_small_batch_unwindowed")
		b.ReportMetric(float64(done), "big_done_ahead_windowed")
		b.ReportMetric(float64(baseDone), "big_done_ahead_unwindowed")
	}
}

// userBehindUser runs one user's 5-photo batch started after another
// user's size photos in 10 batches (BATCH_WINDOW is a batch's size, so
// each batch alone would fit under its cap), and returns how many of them
// were done between the enqueue of the 5 and their completion.
func userBehindUser(t testing.TB, userWindow string, size int) (ahead int, small time.Duration) {
	per := size / 10
	h := newHarness(t, map[string]string{"BATCH_WINDOW": strconv.Itoa(per), "USER_WINDOW": userWindow, "CLUSTER_DELAY": "1h"})
	project := h.project()
	photo := readCorpus(t, "odd/orientation-1.jpg")
	var big []uuid.UUID
	for range 10 {
		big = append(big, h.finalizeBatch(h.owner, project, photo, per))
	}
	done := func() int {
		return h.count(`SELECT coalesce(sum(completed), 0) FROM batches WHERE id = ANY($1)`, pq.Array(big))
	}
	start := time.Now()
	h.run()
	testenv.Eventually(h.t, "the big upload to be under way", patience, func() bool { return done() > 0 })
	other, theirs := h.env.Project(t)
	late := h.finalizeBatch(other, theirs, photo, 5)
	before := done()
	testenv.Eventually(h.t, "the other user's batch to complete", patience, func() bool {
		return h.count(`SELECT count(*) FROM batches WHERE id = $1 AND status = 'completed'`, late) == 1
	})
	small = time.Since(start)
	ahead = done() - before
	testenv.Eventually(h.t, "the big upload to complete", patience, func() bool { return done() == 10*per })
	return ahead, small
}

// Without its cap, each small batch waits for the whole big upload:
// it is all in the queue ahead of it.
func TestSmallWorkIsNotStarvedByAHugeUpload(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		run       func(testing.TB, string, int) (int, time.Duration)
		big, most int
	}{
		// A cap of 16 has the 5 photos wait for about 20 of the big
		// upload's jobs (those queued and running when they come),
		// however large it is and however far it got before them: 100
		// leaves room to tell that from waiting for half of it.
		{"a batch behind a big batch (BATCH_WINDOW)", smallBehindBig, 100, 50},
		{"a user behind another's 10 batches (USER_WINDOW)", userBehindUser, 100, 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ahead, took := c.run(t, "16", c.big)
			t.Logf("with a batch cap of 16: the 5 photos completed after %v, having waited for %d of the %d", took.Round(time.Millisecond), ahead, c.big)
			if ahead > c.most {
				t.Fatalf("the 5 photos waited for %d of the %d", ahead, c.big)
			}
		})
	}
}

// BenchmarkUserFairness measures how long one user's 5-photo batch
// started after another user's 300 photos in 10 batches takes to
// complete, with USER_WINDOW=16 and, as the baseline in the same run,
// without a user cap.
func BenchmarkUserFairness(b *testing.B) { benchFairness(b, userBehindUser, 300) }
