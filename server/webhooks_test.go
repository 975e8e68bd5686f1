package server_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hibiken/asynq"

	"lightbox/testsupport/testenv"
)

func TestWebhookRequestValidation(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	for _, c := range []struct {
		body  string
		field string
	}{
		{`{"events": ["batch.completed"]}`, "url"},
		{`{"url": "ftp://example.com/hook", "events": ["batch.completed"]}`, "url"},
		{`{"url": "/hook", "events": ["batch.completed"]}`, "url"},
		{`{"url": "https://", "events": ["batch.completed"]}`, "url"},
		// Addresses written in the URL meet the import rules at once.
		{`{"url": "http://10.0.0.7/hook", "events": ["batch.completed"]}`, "url"},
		{`{"url": "http://127.0.0.1:9/hook", "events": ["batch.completed"]}`, "url"},
		{`{"url": "http://[::ffff:169.254.169.254]/", "events": ["batch.completed"]}`, "url"},
		{`{"url": "https://example.com/hook"}`, "events"},
		{`{"url": "https://example.com/hook", "events": []}`, "events"},
		{`{"url": "https://example.com/hook", "events": ["batch.completed", "asset.deleted"]}`, "events"},
		{`{"url": "https://example.com/hook", "events": ["ping"]}`, "events"},
		{`{"url": "https://example.com/hook", "events": ["batch.completed"], "secret": "short"}`, "secret"},
	} {
		r := a.do("POST", "/v1/webhooks", key, c.body)
		expect(t, r, 400, "validation_failed")
		if f := fields(t, r); f[c.field] == nil || len(f) != 1 {
			t.Errorf("%s: fields %v, want %s named", c.body, f, c.field)
		}
	}
	if n := a.count(`SELECT count(*) FROM webhooks`); n != 0 {
		t.Fatalf("%d webhooks recorded from refused requests", n)
	}
}

// TestBackupFailedIsAnAdministratorsEvent: backup.failed tells of the
// whole service, so only an administrator's webhook may hear it.
func TestBackupFailedIsAnAdministratorsEvent(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ana := a.user("ana@example.org", false)
	root := a.user("root@example.org", true)
	body := map[string]any{"url": "https://example.com/hook", "events": []string{"asset.failed", "backup.failed"}}
	expect(t, a.do("POST", "/v1/webhooks", ana, body), 403, "forbidden")
	if n := a.count(`SELECT count(*) FROM webhooks`); n != 0 {
		t.Fatalf("%d webhooks recorded from a refused request", n)
	}
	r := a.do("POST", "/v1/webhooks", root, body)
	expect(t, r, 201, "")
	if ev := r.json(t)["events"].([]any); len(ev) != 2 || ev[0] != "asset.failed" || ev[1] != "backup.failed" {
		t.Fatalf("created %s", r.body)
	}
}

func TestWebhookSecretIsShownOnlyOnCreation(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	r := a.do("POST", "/v1/webhooks", key, map[string]any{
		"url": "https://example.com/hook", "events": []string{"export.updated", "batch.completed", "export.updated"},
		"secret": "0123456789abcdef-given"})
	expect(t, r, 201, "")
	hook := r.json(t)
	if hook["secret"] != "0123456789abcdef-given" || len(hook["events"].([]any)) != 2 || hook["disabled"] != false {
		t.Fatalf("created %s", r.body)
	}
	// Without a secret one is made, and shown this once.
	r = a.do("POST", "/v1/webhooks", key, map[string]any{"url": "http://example.org/", "events": []string{"asset.failed"}})
	expect(t, r, 201, "")
	if s, _ := r.json(t)["secret"].(string); len(s) < 32 {
		t.Fatalf("made secret %q", s)
	}

	list := a.do("GET", "/v1/webhooks", key, nil)
	expect(t, list, 200, "")
	items := list.json(t)["items"].([]any)
	if len(items) != 2 {
		t.Fatalf("listed %s", list.body)
	}
	for _, it := range items {
		if _, ok := it.(map[string]any)["secret"]; ok {
			t.Fatalf("a listed webhook shows its secret: %s", list.body)
		}
	}
	one := a.do("GET", "/v1/webhooks/"+hook["id"].(string), key, nil)
	expect(t, one, 200, "")
	if _, ok := one.json(t)["secret"]; ok {
		t.Fatalf("a webhook shows its secret: %s", one.body)
	}
}

func TestAnotherUsersWebhookIsNotFound(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ana, bob := a.user("ana@example.org", false), a.user("bob@example.org", false)
	r := a.do("POST", "/v1/webhooks", ana, map[string]any{"url": "https://example.com/hook", "events": []string{"batch.completed"}})
	expect(t, r, 201, "")
	id := decode[created](t, r).ID

	expect(t, a.do("GET", "/v1/webhooks/"+id, bob, nil), 404, "not_found")
	expect(t, a.do("DELETE", "/v1/webhooks/"+id, bob, nil), 404, "not_found")
	expect(t, a.do("POST", "/v1/webhooks/"+id+"/test", bob, nil), 404, "not_found")
	expect(t, a.do("GET", "/v1/webhooks/"+id+"/deliveries", bob, nil), 404, "not_found")
	if items := decode[pageOf[any]](t, a.do("GET", "/v1/webhooks", bob, nil)).Items; len(items) != 0 {
		t.Fatalf("bob lists %v", items)
	}
	expect(t, a.do("GET", "/v1/webhooks/not-a-uuid", ana, nil), 404, "not_found")

	expect(t, a.do("DELETE", "/v1/webhooks/"+id, ana, nil), 204, "")
	expect(t, a.do("GET", "/v1/webhooks/"+id, ana, nil), 404, "not_found")
	expect(t, a.do("DELETE", "/v1/webhooks/"+id, ana, nil), 404, "not_found")
}

func TestPingQueuesADeliveryJob(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	r := a.do("POST", "/v1/webhooks", key, map[string]any{"url": "https://example.com/hook", "events": []string{"batch.completed"}})
	expect(t, r, 201, "")
	hook := decode[created](t, r).ID

	r = a.do("POST", "/v1/webhooks/"+hook+"/test", key, nil)
	expect(t, r, 202, "")
	d := r.json(t)
	id, _ := d["id"].(string)
	if d["event"] != "ping" || d["status"] != "pending" || d["webhookId"] != hook || d["jobId"] != id || d["attempts"] != 0.0 {
		t.Fatalf("ping %s", r.body)
	}
	// The delivery is a webhook:deliver job on the low queue under its TaskID.
	if n := a.count(`SELECT count(*) FROM jobs WHERE id = $1 AND type = 'webhook:deliver' AND queue = 'low'
		AND task_id = $2 AND enqueued_at IS NOT NULL`, id, "webhook:"+id); n != 1 {
		t.Fatalf("no enqueued job for delivery %s", id)
	}
	info, err := inspector(t, a.env).GetTaskInfo("low", "webhook:"+id)
	if err != nil || info.State != asynq.TaskStatePending || info.MaxRetry != 10 {
		t.Fatalf("task %+v, %v", info, err)
	}
	// Operators see it with the other jobs, under its webhook's owner.
	admin := a.user("root@example.org", true)
	jobs := a.do("GET", "/v1/admin/jobs?status=queued", admin, nil)
	expect(t, jobs, 200, "")
	found := false
	for _, j := range decode[pageOf[jobReply]](t, jobs).Items {
		found = found || j.ID == id && j.Type == "webhook:deliver" && j.OwnerEmail == "ana@example.org"
	}
	if !found {
		t.Fatalf("admin jobs %s lack the ping's job", jobs.body)
	}
	// Each ping is its own delivery.
	expect(t, a.do("POST", "/v1/webhooks/"+hook+"/test", key, nil), 202, "")
	list := a.do("GET", "/v1/webhooks/"+hook+"/deliveries", key, nil)
	expect(t, list, 200, "")
	if items := decode[pageOf[any]](t, list).Items; len(items) != 2 {
		t.Fatalf("deliveries %s", list.body)
	}
}

func TestWebhookToAnAllowedLoopbackAddress(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32"}})
	key := a.user("ana@example.org", false)
	r := a.do("POST", "/v1/webhooks", key, map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"batch.completed"}})
	expect(t, r, 201, "")
	r = a.do("POST", "/v1/webhooks", key, map[string]any{"url": "http://10.0.0.7/hook", "events": []string{"batch.completed"}})
	expect(t, r, 400, "validation_failed")
}

func TestCancelledBatchIsReportedToWebhooks(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	expect(t, a.do("POST", "/v1/webhooks", key, map[string]any{"url": "https://example.com/hook", "events": []string{"batch.completed"}}), 201, "")
	project := a.newProject(key)
	r, _ := a.uploadAll(key, project, corpus(t, "photos/wood.jpg"))
	batch := decode[queued](t, r).BatchID

	expect(t, a.do("POST", "/v1/batches/"+batch+"/cancel", key, nil), 200, "")
	// Cancelling again reports the same ending: still one delivery.
	expect(t, a.do("POST", "/v1/batches/"+batch+"/cancel", key, nil), 200, "")
	if n := a.count(`SELECT count(*) FROM webhook_deliveries d JOIN jobs j ON j.id = d.id
		WHERE d.event = 'batch.completed' AND d.payload->>'id' = $1 AND d.payload->>'status' = 'cancelled'
		AND j.project_id = $2 AND j.type = 'webhook:deliver'`, batch, project); n != 1 {
		t.Fatalf("%d deliveries of the cancelled batch, want 1", n)
	}
}

func TestWebhookLimitHoldsUnderConcurrentCreation(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	const tries = 40
	statuses := make(chan int, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() {
			r := a.do("POST", "/v1/webhooks", key, map[string]any{
				"url": fmt.Sprintf("https://example.com/hook/%d", i), "events": []string{"batch.completed"}})
			statuses <- r.status
		})
	}
	wg.Wait()
	close(statuses)
	created, refused := 0, 0
	for s := range statuses {
		switch s {
		case 201:
			created++
		case 409:
			refused++
		default:
			t.Errorf("status %d", s)
		}
	}
	if n := a.count(`SELECT count(*) FROM webhooks`); created != 25 || refused != tries-25 || n != 25 {
		t.Fatalf("%d created, %d refused, %d recorded; want 25, %d, 25", created, refused, n, tries-25)
	}
	expect(t, a.do("POST", "/v1/webhooks", key, map[string]any{"url": "https://example.com/more", "events": []string{"batch.completed"}}),
		409, "too_many_webhooks")
}
