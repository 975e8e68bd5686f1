package tasks_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/tasks"
)

func TestRetryDelayFollowsEachSchedulePlusJitter(t *testing.T) {
	for n, want := range []time.Duration{2 * time.Second, 10 * time.Second, time.Minute} {
		seen := map[time.Duration]bool{}
		for range 50 {
			ingest := tasks.NewTask(tasks.IngestPayload{AssetID: uuid.New()})
			d := tasks.RetryDelay(n, errors.New("x"), ingest)
			if again := tasks.RetryDelay(n, errors.New("x"), ingest); again != d {
				t.Fatalf("the same task and retry gave %v then %v", d, again)
			}
			if d < want*8/10 || d > want*12/10 {
				t.Fatalf("retry %d: %v outside %v ±20%%", n, d, want)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Fatalf("retry %d: only %d distinct delays in 50, jitter missing", n, len(seen))
		}
	}
	export := tasks.NewTask(tasks.ExportPayload{ExportID: uuid.New()})
	if d := tasks.RetryDelay(2, errors.New("x"), export); d < 24*time.Minute {
		t.Fatalf("export third retry %v, want about 30m", d)
	}
}

func TestRateLimitedWaitsWithoutFailing(t *testing.T) {
	err := tasks.RateLimited("embed", 7*time.Second)
	if tasks.IsFailure(err) {
		t.Fatal("a rate-limited task counted as a failure")
	}
	if !tasks.IsFailure(errors.New("boom")) {
		t.Fatal("a real error not counted")
	}
	embed := tasks.NewTask(tasks.EmbedPayload{AssetID: uuid.New(), Model: "m"})
	if d := tasks.RetryDelay(0, err, embed); d < 5*time.Second || d > 9*time.Second {
		t.Fatalf("rate-limited delay %v, want about 7s", d)
	}
}

func TestPermanentSkipsRetry(t *testing.T) {
	err := tasks.Permanent(errors.New("corrupt"))
	if !errors.Is(err, asynq.SkipRetry) || !tasks.IsPermanent(err) || err.Error() == "" {
		t.Fatalf("permanent error %v", err)
	}
	_, err = tasks.Decode[tasks.IngestPayload](asynq.NewTask(tasks.TypeIngest, []byte("{not json")))
	if !tasks.IsPermanent(err) {
		t.Fatalf("undecodable payload error %v is not permanent", err)
	}
}

func TestWebhookDeliveriesRetryTenTimesWithinAnHour(t *testing.T) {
	if n := tasks.MaxRetry(tasks.TypeWebhook); n != 10 {
		t.Fatalf("webhook retries %d, want 10", n)
	}
	if q := tasks.QueueOf(tasks.TypeWebhook); q != tasks.QueueLow || !tasks.HasJob(tasks.TypeWebhook) {
		t.Fatalf("webhook queue %s, has job %v", q, tasks.HasJob(tasks.TypeWebhook))
	}
	d := uuid.New()
	task := tasks.NewTask(tasks.WebhookPayload{DeliveryID: d})
	if task.Type() != "webhook:deliver" || (tasks.WebhookPayload{DeliveryID: d}).TaskID() != "webhook:"+d.String() {
		t.Fatalf("webhook task %s", task.Type())
	}
	var longest time.Duration
	for n := range 12 {
		longest = max(longest, tasks.RetryDelay(n, errors.New("x"), task))
	}
	if longest > time.Hour || longest < 30*time.Minute {
		t.Fatalf("longest webhook backoff %v, want up to an hour", longest)
	}
}

func TestFileWritesEndOutlastsEveryTaskThatWritesAnAssetsFiles(t *testing.T) {
	end := tasks.FileWritesEnd()
	for _, typ := range []string{tasks.TypeIngest, tasks.TypeDownload, tasks.TypeEdit} {
		if tasks.Timeout(typ) > end {
			t.Fatalf("%s may write files for %v, past the %v a delete waits", typ, tasks.Timeout(typ), end)
		}
	}
	if end != 5*time.Minute {
		t.Fatalf("file writes end after %v, want the 5m of ingest, download and edit", end)
	}
}

// Every queue a task goes to is weighted; face work alone is on the faces
// queue, weighted below every other; and while thumbnails wait an ingest
// is still picked about once in 70.
func TestEveryQueueIsWeightedFacesLast(t *testing.T) {
	w := tasks.DefaultWeights
	for _, typ := range tasks.Types() {
		q := tasks.QueueOf(typ)
		if w[q] == 0 {
			t.Errorf("%s goes to %s, which has no weight", typ, q)
		}
		if face := typ == tasks.TypeFaces || typ == tasks.TypeFacesScan; face != (q == tasks.QueueFaces) {
			t.Errorf("%s is on %s", typ, q)
		}
	}
	for q, n := range w {
		if q != tasks.QueueFaces && n <= w[tasks.QueueFaces] {
			t.Errorf("%s weighs %d, no more than faces' %d", q, n, w[tasks.QueueFaces])
		}
	}
	if r := float64(w[tasks.QueueThumbnails]) / float64(w[tasks.QueueDefault]); r < 60 || r > 80 {
		t.Errorf("thumbnails weigh %.0f times default, want about 70", r)
	}
}
