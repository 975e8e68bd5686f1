package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// hookOf records a webhook of owner listening to events.
func hookOf(t *testing.T, env *testenv.Env, owner uuid.UUID, events ...string) store.Webhook {
	t.Helper()
	w := store.Webhook{ID: uuid.New(), UserID: owner, URL: "https://example.com/hook", Events: events, Secret: "0123456789abcdef"}
	if err := env.Store.CreateWebhook(context.Background(), &w, 25); err != nil {
		t.Fatal(err)
	}
	return w
}

// deliverTo records one report's delivery to each of hooks and the job
// of each that is new, as the dispatcher does.
func deliverTo(t *testing.T, env *testenv.Env, hooks []store.Webhook, project uuid.UUID, event, subject string) []store.Job {
	t.Helper()
	ctx := context.Background()
	var added []store.Job
	err := env.Store.WithTx(ctx, func(tx *store.Store) error {
		for _, h := range hooks {
			id := app.DeliveryID(h.ID, event, subject, "done")
			isNew, err := tx.AddDelivery(ctx, store.Delivery{ID: id, WebhookID: h.ID, Event: event, Payload: json.RawMessage(`{}`)})
			if err != nil || !isNew {
				return err
			}
			j, err := jobs.Insert(ctx, tx, tasks.WebhookPayload{Job: tasks.Job{JobID: id, ProjectID: project}, DeliveryID: id})
			if err != nil {
				return err
			}
			added = append(added, j)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return added
}

func TestWebhookDeliveriesAreRecordedOncePerReport(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	other, _ := env.Project(t)
	batches := hookOf(t, env, owner, app.EventBatchCompleted)
	hookOf(t, env, owner, app.EventAssetFailed)
	hookOf(t, env, other, app.EventBatchCompleted)

	hooks, err := env.Store.SubscribedWebhooks(ctx, project, app.EventBatchCompleted)
	if err != nil || len(hooks) != 1 || hooks[0].ID != batches.ID {
		t.Fatalf("subscribed %+v, %v; want only the owner's batch.completed hook", hooks, err)
	}
	added := deliverTo(t, env, hooks, project, app.EventBatchCompleted, "b1")
	if len(added) != 1 || added[0].Type != tasks.TypeWebhook || added[0].ProjectID != project {
		t.Fatalf("added %+v", added)
	}
	if again := deliverTo(t, env, hooks, project, app.EventBatchCompleted, "b1"); len(again) != 0 {
		t.Fatalf("the same report again added %+v", again)
	}
	// A ping's job belongs to no project.
	ping := deliverTo(t, env, hooks, uuid.Nil, app.EventPing, "p1")
	if len(ping) != 1 {
		t.Fatalf("ping %+v", ping)
	}
	if j, err := env.Store.JobByID(ctx, ping[0].ID); err != nil || j.ProjectID != uuid.Nil {
		t.Fatalf("ping job %+v, %v", j, err)
	}

	d, err := env.Store.RecordAttempt(ctx, added[0].ID, store.DeliveryPending, 500, "The endpoint answered 500.")
	if err != nil || d.Attempts != 1 || *d.ResponseStatus != 500 || d.DeliveredAt != nil {
		t.Fatalf("first attempt %+v, %v", d, err)
	}
	d, err = env.Store.RecordAttempt(ctx, added[0].ID, store.DeliveryDone, 204, "")
	if err != nil || d.Attempts != 2 || d.LastError != nil || d.DeliveredAt == nil {
		t.Fatalf("second attempt %+v, %v", d, err)
	}
	if _, err := env.Store.Delivery(ctx, other, d.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another user's delivery: %v", err)
	}

	if err := env.Store.DisableWebhook(ctx, batches.ID, true); err != nil {
		t.Fatal(err)
	}
	if hooks, _ := env.Store.SubscribedWebhooks(ctx, project, app.EventBatchCompleted); len(hooks) != 0 {
		t.Fatalf("a disabled hook is still subscribed: %+v", hooks)
	}
	if err := env.Store.DeleteWebhook(ctx, other, batches.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting another user's webhook: %v", err)
	}
	if err := env.Store.DeleteWebhook(ctx, owner, batches.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.Store.DeliveryWithHook(ctx, d.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted webhook's delivery: %v", err)
	}
}

// TestUnnotifiedEventsWaitUntilTheStateTheyAreInIsMarked: a batch's ending
// and an asset's failure are listed for the sweep once older than its
// cutoff, until the state they are in is marked told. A mark of a state
// the row has since left changes nothing, and a later ending is new.
func TestUnnotifiedEventsWaitUntilTheStateTheyAreInIsMarked(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	res := env.Finalize(t, owner, project, testenv.Files(1)...)
	job := res.Jobs[0]
	listed := func() (batches, failures int) {
		t.Helper()
		bs, err := env.Store.UnnotifiedBatches(ctx, time.Now().Add(time.Minute), 10)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := env.Store.UnnotifiedFailures(ctx, time.Now().Add(time.Minute), 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(bs), len(fs)
	}
	if b, f := listed(); b != 0 || f != 0 {
		t.Fatalf("before the job ends: %d batches, %d failures listed", b, f)
	}
	first := env.FailJob(t, job, 1, "decode_failed")
	if bs, _ := env.Store.UnnotifiedBatches(ctx, time.Now().Add(-time.Minute), 10); len(bs) != 0 {
		t.Fatal("an ending newer than the cutoff is listed")
	}
	if b, f := listed(); b != 1 || f != 1 {
		t.Fatalf("after the failure: %d batches, %d failures listed, want 1 and 1", b, f)
	}
	failed, err := env.Store.JobByID(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	// markFirst marks the first ending and failure told.
	markFirst := func() {
		t.Helper()
		if err := env.Store.MarkBatchNotified(ctx, first.ID, *first.CompletedAt); err != nil {
			t.Fatal(err)
		}
		if err := env.Store.MarkFailureNotified(ctx, job, failed.UpdatedAt); err != nil {
			t.Fatal(err)
		}
	}
	markFirst()
	if b, f := listed(); b != 0 || f != 0 {
		t.Fatalf("after the marks: %d batches, %d failures listed", b, f)
	}

	// Run again, the job fails again: a new ending, which a late mark of
	// the first one does not cover.
	if err := env.Store.RequeueJob(ctx, job, true); err != nil {
		t.Fatal(err)
	}
	again := env.FailJob(t, job, 2, "decode_failed")
	if again.CompletedAt.Equal(*first.CompletedAt) {
		t.Fatal("setup: the second ending has the first one's time")
	}
	markFirst()
	if b, f := listed(); b != 1 || f != 1 {
		t.Fatalf("after the second failure: %d batches, %d failures listed, want 1 and 1", b, f)
	}
}
