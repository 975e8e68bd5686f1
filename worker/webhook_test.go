package worker_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/app"
	"lightbox/jobs"
	"lightbox/render"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// received is one delivery as an endpoint saw it.
type received struct {
	ID        uuid.UUID       `json:"id"`
	Event     string          `json:"event"`
	CreatedAt time.Time       `json:"createdAt"`
	Data      json.RawMessage `json:"data"`
	header    http.Header
	body      []byte
}

// receiver is a webhook endpoint on loopback that checks each delivery's
// signature with the secret, answers fail[i] to the i-th request (200 once
// they run out) and keeps what it got.
type receiver struct {
	t      *testing.T
	secret string
	fail   []int
	mu     sync.Mutex
	got    []received
	srv    *httptest.Server
}

func newReceiver(t *testing.T, secret string, fail ...int) *receiver {
	r := &receiver{t: t, secret: secret, fail: fail}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := checkSignature(r.secret, req.Header.Get("Lightbox-Signature"), body); err != nil {
		r.t.Errorf("delivery signature: %v", err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var got received
	if err := json.Unmarshal(body, &got); err != nil {
		r.t.Errorf("delivery body %s: %v", body, err)
	}
	got.header, got.body = req.Header.Clone(), body
	r.mu.Lock()
	n := len(r.got)
	r.got = append(r.got, got)
	r.mu.Unlock()
	if n < len(r.fail) {
		w.WriteHeader(r.fail[n])
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (r *receiver) deliveries() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// checkSignature verifies "t=<unix>,v1=<hex HMAC-SHA256 of t.body>" as a
// receiver would.
func checkSignature(secret, header string, body []byte) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	if ts == "" || sig == "" {
		return errors.New("header " + header + " lacks t or v1")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	want := hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return errors.New("v1 does not match the body signed with the secret")
	}
	return nil
}

// webhook records a webhook of the harness's user.
func (h *harness) webhook(url, secret string, events ...string) store.Webhook {
	h.t.Helper()
	w := store.Webhook{ID: uuid.New(), UserID: h.owner, URL: url, Events: events, Secret: secret}
	if err := h.env.Store.CreateWebhook(context.Background(), &w, 25); err != nil {
		h.t.Fatal(err)
	}
	return w
}

func (h *harness) dispatcher() *jobs.Dispatcher {
	return jobs.New(jobs.Config{Store: h.env.Store, Queue: h.queue, Inspector: h.in})
}

// app is an App on a fresh dispatcher: its use cases hand their jobs over.
func (h *harness) app() *app.App { return app.New(app.Config{Jobs: h.dispatcher()}) }

type deliveryRow struct {
	Status         string  `db:"status"`
	Attempts       int     `db:"attempts"`
	ResponseStatus *int    `db:"response_status"`
	LastError      *string `db:"last_error"`
	JobStatus      string  `db:"job_status"`
	JobAttempt     int     `db:"job_attempt"`
}

func (h *harness) delivery(id uuid.UUID) deliveryRow {
	h.t.Helper()
	var r deliveryRow
	if err := h.env.DB.Get(&r, `SELECT d.status, d.attempts, d.response_status, d.last_error,
		j.status AS job_status, j.attempt AS job_attempt
		FROM webhook_deliveries d JOIN jobs j ON j.id = d.id WHERE d.id = $1`, id); err != nil {
		h.t.Fatal(err)
	}
	return r
}

func TestWebhookPingIsSignedAndRedeliveredAfterTwoFailures(t *testing.T) {
	t.Parallel()
	const secret = "a-secret-of-some-length"
	rcv := newReceiver(t, secret, http.StatusInternalServerError, http.StatusInternalServerError)
	h := newHarness(t, map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32"})
	hook := h.webhook(rcv.srv.URL+"/hook", secret, app.EventBatchCompleted)
	job, err := h.app().PingWebhook(context.Background(), hook)
	if err != nil {
		t.Fatal(err)
	}
	h.run()

	// Each failed attempt leaves the task waiting to retry on its
	// schedule; running it at once is what an operator's retry does, and
	// keeps the test from waiting out the backoff.
	queue, taskID := tasks.QueueOf(tasks.TypeWebhook), tasks.WebhookID(job.ID)
	for attempt := 1; attempt <= 2; attempt++ {
		testenv.Eventually(h.t, "a failed attempt waiting to retry", patience, func() bool {
			info, err := h.in.GetTaskInfo(queue, taskID)
			d := h.delivery(job.ID)
			// The job's row follows the task a few milliseconds later;
			// before the attempt's running state is written it still says
			// queued from the attempt before, so its attempt tells them apart.
			return err == nil && info.State == asynq.TaskStateRetry && d.Attempts == attempt &&
				d.JobStatus == "queued" && d.JobAttempt == attempt
		})
		d := h.delivery(job.ID)
		if d.Status != store.DeliveryPending || d.ResponseStatus == nil || *d.ResponseStatus != 500 || d.JobStatus != "queued" {
			t.Fatalf("after attempt %d: %+v", attempt, d)
		}
		if err := h.in.RunTask(queue, taskID); err != nil {
			t.Fatal(err)
		}
	}
	// The delivery's row is written by the handler, its job's states a
	// moment later by the worker's job writer: wait for both.
	testenv.Eventually(h.t, "the delivery to succeed and its job to end", patience, func() bool {
		d := h.delivery(job.ID)
		return d.Status == store.DeliveryDone && d.JobStatus != "running" && d.JobStatus != "queued"
	})

	d := h.delivery(job.ID)
	if d.Attempts != 3 || d.JobStatus != "done" || d.JobAttempt != 3 || *d.ResponseStatus != 200 {
		t.Fatalf("delivered %+v, want 3 attempts and a done job", d)
	}
	got := rcv.deliveries()
	if len(got) != 3 {
		t.Fatalf("endpoint got %d requests, want 3", len(got))
	}
	for _, g := range got {
		if g.ID != job.ID || g.Event != "ping" || g.header.Get("Lightbox-Delivery") != job.ID.String() ||
			g.CreatedAt.IsZero() || string(g.body) != string(got[0].body) {
			t.Fatalf("delivery %+v (%s), want the same ping %s every time", g, g.body, job.ID)
		}
	}
	var data struct{ WebhookID uuid.UUID }
	json.Unmarshal(got[0].Data, &data)
	if data.WebhookID != hook.ID {
		t.Fatalf("ping data %s", got[0].Data)
	}
}

func TestBatchCompletedIsDeliveredOnce(t *testing.T) {
	t.Parallel()
	const secret = "another-secret-0123"
	rcv := newReceiver(t, secret)
	h := newHarness(t, map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32", "CLUSTER_DELAY": "1s"})
	h.webhook(rcv.srv.URL, secret, app.EventBatchCompleted)
	h.webhook(rcv.srv.URL, secret, app.EventExportUpdated) // hears nothing here
	project := h.project()
	asset := h.finalize(project, "wood.jpg", readCorpus(t, "photos/wood.jpg"))
	h.run()

	// The delivery row is done inside the handler, its job just after it.
	testenv.Eventually(h.t, "the batch's delivery and its job", patience, func() bool {
		return h.count(`SELECT count(*) FROM webhook_deliveries WHERE status = 'done'`) > 0 &&
			h.count(`SELECT count(*) FROM jobs WHERE type = 'webhook:deliver' AND status = 'done'`) > 0
	})
	var batch store.Batch
	if err := h.env.DB.Get(&batch, `SELECT b.id, b.project_id, b.user_id, b.kind, b.status, b.total, b.completed, b.failed,
		b.created_at, b.completed_at FROM batches b JOIN jobs j ON j.batch_id = b.id WHERE j.asset_id = $1`, asset); err != nil {
		t.Fatal(err)
	}
	got := rcv.deliveries()
	if len(got) != 1 || got[0].Event != "batch.completed" {
		t.Fatalf("endpoint got %+v, want one batch.completed", got)
	}
	var data struct {
		ID        uuid.UUID
		ProjectID uuid.UUID
		Status    string
		Total     int
		Completed int
	}
	json.Unmarshal(got[0].Data, &data)
	if data.ID != batch.ID || data.ProjectID != project || data.Status != "completed" || data.Completed != data.Total {
		t.Fatalf("batch.completed data %s, batch %+v", got[0].Data, batch)
	}
	// The delivery is a job of the project like any other.
	if n := h.count(`SELECT count(*) FROM jobs WHERE id = $1 AND type = 'webhook:deliver' AND project_id = $2 AND status = 'done'`,
		got[0].ID, project); n != 1 {
		t.Fatalf("no done webhook:deliver job %s in the project", got[0].ID)
	}
	// Reporting the same ending again delivers nothing new.
	h.app().BatchEnded(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), &batch)
	if n := h.count(`SELECT count(*) FROM webhook_deliveries`); n != 1 {
		t.Fatalf("%d deliveries after the same report twice, want 1", n)
	}
}

func TestAssetFailureIsDelivered(t *testing.T) {
	t.Parallel()
	const secret = "yet-another-secret-42"
	rcv := newReceiver(t, secret)
	h := newHarness(t, map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32"})
	h.webhook(rcv.srv.URL, secret, app.EventAssetFailed)
	project := h.project()
	bad := h.finalize(project, "empty.jpg", nil)
	h.run()

	testenv.Eventually(h.t, "the asset.failed delivery", patience, func() bool { return len(rcv.deliveries()) > 0 })
	got := rcv.deliveries()[0]
	var data struct {
		AssetID   uuid.UUID
		ProjectID uuid.UUID
		JobType   string
		Error     struct{ Code string }
	}
	json.Unmarshal(got.Data, &data)
	if got.Event != "asset.failed" || data.AssetID != bad || data.ProjectID != project || data.JobType != tasks.TypeIngest || data.Error.Code == "" {
		t.Fatalf("delivery %s %s", got.Event, got.Data)
	}
}

func TestGoneDisablesTheWebhook(t *testing.T) {
	t.Parallel()
	const secret = "gone-endpoint-secret"
	rcv := newReceiver(t, secret, http.StatusGone)
	h := newHarness(t, map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32"})
	hook := h.webhook(rcv.srv.URL, secret, app.EventBatchCompleted)
	job, err := h.app().PingWebhook(context.Background(), hook)
	if err != nil {
		t.Fatal(err)
	}
	h.run()
	testenv.Eventually(h.t, "the delivery to fail", patience, func() bool { return h.delivery(job.ID).JobStatus == "failed" })
	if d := h.delivery(job.ID); d.Status != store.DeliveryFailed || d.Attempts != 1 || *d.ResponseStatus != http.StatusGone {
		t.Fatalf("delivery %+v, want failed after one attempt", d)
	}
	if n := h.count(`SELECT count(*) FROM webhooks WHERE id = $1 AND disabled_at IS NOT NULL`, hook.ID); n != 1 {
		t.Fatal("the webhook is still enabled")
	}
	// A disabled webhook hears of no events; a ping that gets through
	// enables it again.
	project := h.project()
	if hooks, err := h.env.Store.SubscribedWebhooks(context.Background(), project, app.EventBatchCompleted); err != nil || len(hooks) != 0 {
		t.Fatalf("subscribed %v, %v", hooks, err)
	}
	again, err := h.app().PingWebhook(context.Background(), hook)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(h.t, "the second ping", patience, func() bool { return h.delivery(again.ID).Status == store.DeliveryDone })
	if n := h.count(`SELECT count(*) FROM webhooks WHERE id = $1 AND disabled_at IS NULL`, hook.ID); n != 1 {
		t.Fatal("the webhook is still disabled after a ping got through")
	}
}

// refuseDeliveries makes Postgres refuse every delivery recorded from now
// on, as a full disk or a lost connection would. It returns how many it
// has refused (a sequence counts them: a rollback does not undo nextval)
// and what lets them through again.
func (h *harness) refuseDeliveries() (refused func() int, allow func()) {
	h.t.Helper()
	h.exec(`CREATE SEQUENCE refused_deliveries`)
	h.exec(`CREATE FUNCTION refuse_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			PERFORM nextval('refused_deliveries');
			RAISE EXCEPTION 'no room for the delivery';
		END $$`)
	h.exec(`CREATE TRIGGER refuse BEFORE INSERT ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION refuse_delivery()`)
	refused = func() int {
		return h.count(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM refused_deliveries`)
	}
	return refused, func() { h.exec(`DROP TRIGGER refuse ON webhook_deliveries`) }
}

// TestSweepTellsWebhooksWhatAFailedWriteKeptFromThem: the batch ends with
// its photo failed, but the deliveries of both reports cannot be recorded.
// Nothing writes those states again, so the sweep tells them, once.
func TestSweepTellsWebhooksWhatAFailedWriteKeptFromThem(t *testing.T) {
	t.Parallel()
	const secret = "refused-then-swept-secret"
	rcv := newReceiver(t, secret)
	h := newHarness(t, map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32"})
	h.webhook(rcv.srv.URL, secret, app.EventBatchCompleted, app.EventAssetFailed)
	refused, allow := h.refuseDeliveries()
	project := h.project()
	bad := h.finalize(project, "empty.jpg", nil)
	h.run()

	testenv.Eventually(h.t, "both reports to be refused", patience, func() bool { return refused() == 2 })
	allow()
	// Fresh events are left alone: their own path may still be telling them.
	h.sweep()
	if n := h.count(`SELECT count(*) FROM webhook_deliveries`); n != 0 {
		t.Fatalf("the sweep recorded %d deliveries of fresh events", n)
	}

	h.env.Age(t, "batches", "completed_at", 2*time.Minute, "completed_at IS NOT NULL")
	h.env.Age(t, "jobs", "updated_at", 2*time.Minute, "status = 'failed'")
	h.sweep()
	if n := h.count(`SELECT count(*) FROM webhook_deliveries`); n != 2 {
		t.Fatalf("the sweep recorded %d deliveries, want batch.completed and asset.failed", n)
	}
	testenv.Eventually(h.t, "both deliveries", patience, func() bool {
		return h.count(`SELECT count(*) FROM webhook_deliveries WHERE status = 'done'`) == 2
	})
	h.sweep()
	if n := h.count(`SELECT count(*) FROM webhook_deliveries`); n != 2 {
		t.Fatalf("%d deliveries after another sweep, want still 2", n)
	}
	got := map[string]struct{ AssetID, ID uuid.UUID }{}
	for _, d := range rcv.deliveries() {
		var data struct{ AssetID, ID uuid.UUID }
		json.Unmarshal(d.Data, &data)
		if _, ok := got[d.Event]; ok {
			t.Fatalf("%s delivered twice", d.Event)
		}
		got[d.Event] = data
	}
	var batch uuid.UUID
	h.env.DB.Get(&batch, `SELECT batch_id FROM jobs WHERE asset_id = $1`, bad)
	if len(got) != 2 || got["asset.failed"].AssetID != bad || got["batch.completed"].ID != batch {
		t.Fatalf("endpoint got %+v, want asset.failed of %s and batch.completed of %s", got, bad, batch)
	}
}

// TestSweepTellsWebhooksOfAnExportAFailedWriteKeptFromThem is the same for
// a finished export.
func TestSweepTellsWebhooksOfAnExportAFailedWriteKeptFromThem(t *testing.T) {
	t.Parallel()
	const secret = "refused-export-secret"
	h, rcv, id, task := exportHeard(t, secret)
	refused, allow := h.refuseDeliveries()
	if err := h.w.Handler().ProcessTask(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	if n := refused(); n != 1 {
		t.Fatalf("%d deliveries refused, want the export's", n)
	}
	allow()
	testenv.Eventually(h.t, "the export's job to end", patience, func() bool {
		return h.count(`SELECT count(*) FROM jobs j JOIN exports e ON e.job_id = j.id WHERE e.id = $1 AND j.status = 'done'`, id) == 1
	})
	h.sweep()
	if n := h.count(`SELECT count(*) FROM webhook_deliveries`); n != 0 {
		t.Fatalf("the sweep recorded %d deliveries of a fresh export", n)
	}

	h.env.Age(t, "exports", "updated_at", 2*time.Minute, "")
	h.env.Age(t, "jobs", "updated_at", 2*time.Minute, "")
	h.sweep()
	h.sweep()
	if n := h.count(`SELECT count(*) FROM webhook_deliveries`); n != 1 {
		t.Fatalf("the sweeps recorded %d deliveries, want the export's one", n)
	}
	h.run()
	testenv.Eventually(h.t, "the delivery", patience, func() bool {
		return h.count(`SELECT count(*) FROM webhook_deliveries WHERE status = 'done'`) == 1
	})
	got := exportReports(rcv)
	if len(got) != 1 || got[0].event != "export.updated" || got[0].ID != id || got[0].Status != "done" {
		t.Fatalf("endpoint got %+v, want one export.updated of %s done", got, id)
	}
}

// TestExpiredExportIsReported: an export's download is gone once it
// expires, and its webhooks hear of it as they heard of it being done.
func TestExpiredExportIsReported(t *testing.T) {
	t.Parallel()
	const secret = "expired-export-secret"
	h, rcv, id, task := exportHeard(t, secret)
	if err := h.w.Handler().ProcessTask(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	h.env.Age(t, "exports", "expires_at", time.Second, "id = $1", id)
	h.sweep()
	h.run()
	testenv.Eventually(h.t, "two deliveries", patience, func() bool {
		return h.count(`SELECT count(*) FROM webhook_deliveries WHERE status = 'done'`) == 2
	})
	var states []string
	for _, r := range exportReports(rcv) {
		if r.event != "export.updated" || r.ID != id {
			t.Fatalf("endpoint got %s of %s, want export.updated of %s", r.event, r.ID, id)
		}
		states = append(states, r.Status)
	}
	slices.Sort(states)
	if !slices.Equal(states, []string{"done", "expired"}) {
		t.Fatalf("export.updated states %v, want done and expired", states)
	}
}

// exportHeard is a harness whose project has a ready photo and an export of
// it not yet built, and a webhook of export.updated leading to rcv.
func exportHeard(t *testing.T, secret string) (h *harness, rcv *receiver, id uuid.UUID, task *asynq.Task) {
	t.Helper()
	rcv = newReceiver(t, secret)
	h = newHarness(t, map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32"})
	h.webhook(rcv.srv.URL, secret, app.EventExportUpdated)
	project := h.project()
	h.ready(project, "photos/wood.jpg")
	id, task = h.newExport(project, "full_res", render.Settings{IncludeNotReady: true})
	return h, rcv, id, task
}

// exportReport is one delivery rcv got, with the export it names.
type exportReport struct {
	event  string
	ID     uuid.UUID
	Status string
}

func exportReports(rcv *receiver) []exportReport {
	var out []exportReport
	for _, d := range rcv.deliveries() {
		r := exportReport{event: d.Event}
		json.Unmarshal(d.Data, &r)
		out = append(out, r)
	}
	return out
}
