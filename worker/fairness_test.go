package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/internal/testenv"
	"lightbox/jobs"
	"lightbox/tasks"
)

// finalizeBatch records n uploaded copies of data as one batch, as one
// finalize call does, and enqueues the first BATCH_WINDOW of them the way
// the API does. It returns the batch.
func (h *harness) finalizeBatch(project uuid.UUID, data []byte, n int) uuid.UUID {
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
	res := h.env.Finalize(h.t, h.owner, project, jobs.IngestSpec(project), uploads...)
	first, err := h.env.Store.ReleasableJobs(ctx, res.BatchID, time.Now().Add(time.Minute), h.cfg.BatchWindow, n)
	if err != nil {
		h.t.Fatal(err)
	}
	ts := make([]*asynq.Task, len(first))
	ids := make([]uuid.UUID, len(first))
	for i, j := range first {
		ts[i], ids[i] = tasks.New(j.Type, j.Payload, j.TaskID), j.ID
	}
	for _, err := range tasks.EnqueueAll(ctx, h.queue, ts) {
		if err != nil {
			h.t.Fatal(err)
		}
	}
	h.env.Store.MarkEnqueued(ctx, ids)
	return *res.BatchID
}

// smallBehindBig runs a 5-photo batch started after a 200-photo one and
// returns how many of the big batch's jobs were done when the small one
// completed.
func smallBehindBig(t testing.TB, window string) (bigDone int, small time.Duration) {
	h := newHarness(t, map[string]string{"BATCH_WINDOW": window, "CLUSTER_DELAY": "1h"})
	project := h.project()
	photo := readCorpus(t, "odd/orientation-1.jpg")
	big := h.finalizeBatch(project, photo, 200)
	start := time.Now()
	h.run()
	h.waitFor("the big batch to be under way", 5*time.Minute, func() bool {
		return h.count(`SELECT completed FROM batches WHERE id = $1`, big) > 0
	})
	late := h.finalizeBatch(project, photo, 5)
	h.waitFor("the small batch to complete", 5*time.Minute, func() bool {
		return h.count(`SELECT count(*) FROM batches WHERE id = $1 AND status = 'completed'`, late) == 1
	})
	small = time.Since(start)
	bigDone = h.count(`SELECT completed FROM batches WHERE id = $1`, big)
	h.waitFor("the big batch to complete", 5*time.Minute, func() bool {
		return h.count(`SELECT count(*) FROM batches WHERE id = $1 AND status = 'completed'`, big) == 1
	})
	return bigDone, small
}

func TestASmallBatchIsNotStarvedByAHugeOne(t *testing.T) {
	t.Parallel()
	bigDone, took := smallBehindBig(t, "16")
	t.Logf("with a window of 16: the 5-photo batch completed after %v, when %d of the 200-photo batch were done", took.Round(time.Millisecond), bigDone)
	if bigDone > 100 {
		t.Fatalf("the small batch waited for %d of the big batch's 200 photos", bigDone)
	}
}

// BenchmarkBatchFairness measures how long a 5-photo batch started after
// a 200-photo one takes to complete, with BATCH_WINDOW=16 and, as the
// baseline in the same run, without a window.
func BenchmarkBatchFairness(b *testing.B) {
	for range b.N {
		done, took := smallBehindBig(b, "16")
		baseDone, baseTook := smallBehindBig(b, "0")
		b.ReportMetric(took.Seconds(), "s_small_batch_windowed")
		b.ReportMetric(baseTook.Seconds(), "s_small_batch_unwindowed")
		b.ReportMetric(float64(done), "big_done_before_windowed")
		b.ReportMetric(float64(baseDone), "big_done_before_unwindowed")
	}
}
