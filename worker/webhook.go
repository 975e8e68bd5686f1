package worker

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/app"
	"lightbox/jobs"
	"lightbox/netguard"
	"lightbox/store"
	"lightbox/tasks"
)

// webhookTimeout bounds one delivery, from dial to the endpoint's answer.
const webhookTimeout = 10 * time.Second

// webhookClient posts deliveries under the same address rules as URL
// imports. It follows no redirect: the answer to the POST is the outcome,
// and a 3xx counts as a failure to be retried.
func webhookClient(allow []netip.Prefix) *http.Client {
	return &http.Client{
		Transport: guardedTransport(allow, webhookTimeout),
		Timeout:   webhookTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// deliveryError is a failed attempt the next retry may fix.
type deliveryError struct {
	msg string
}

func (e *deliveryError) Error() string     { return e.msg }
func (e *deliveryError) ErrorCode() string { return "delivery_failed" }

func init() { handle(tasks.TypeWebhook, (*Worker).deliverWebhook) }

// deliverWebhook sends one delivery: a POST of {id, event, createdAt, data}
// signed with the webhook's secret. A 2xx answer delivers it; anything
// else is retried on the task's schedule, and 410 Gone disables the
// webhook. A disabled webhook gets only pings.
func (w *Worker) deliverWebhook(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.WebhookPayload](t)
	if err != nil {
		return err
	}
	d, hook, err := w.st.DeliveryWithHook(ctx, p.DeliveryID)
	if errors.Is(err, store.ErrNotFound) {
		return badInput("webhook_deleted", "The webhook was deleted, so nothing is sent.")
	}
	if err != nil {
		return err
	}
	if d.Status == store.DeliveryDone {
		return nil // a repeated run: the endpoint has it
	}
	ping := d.Event == app.EventPing
	if hook.DisabledAt != nil && !ping {
		w.recordAttempt(ctx, d.ID, store.DeliveryFailed, 0, "the webhook is disabled")
		return badInput("webhook_disabled", "The webhook is disabled: its endpoint answered 410 Gone.")
	}
	body, err := deliveryBody(d)
	if err != nil {
		return tasks.Permanent(err)
	}
	status, sendErr := w.postDelivery(ctx, hook, d.ID, body)
	sendErr = w.tracker.Interrupted(ctx, sendErr)

	// Record the attempt even when the task's own context has ended.
	ctx = context.WithoutCancel(ctx)
	switch {
	case sendErr == nil:
		// The endpoint is back: a ping is how its owner says so. Enabled
		// before the delivery shows done, so whoever sees it done sees the
		// webhook enabled.
		if hook.DisabledAt != nil {
			if err := w.st.DisableWebhook(ctx, hook.ID, false); err != nil {
				w.log.Warn("enable webhook", "webhook", hook.ID, "err", err)
			}
		}
		w.recordAttempt(ctx, d.ID, store.DeliveryDone, status, "")
		return nil
	case status == http.StatusGone:
		if err := w.st.DisableWebhook(ctx, hook.ID, true); err != nil {
			w.log.Warn("disable webhook", "webhook", hook.ID, "err", err)
		}
		sendErr = tasks.Permanent(sendErr)
	case errors.Is(sendErr, netguard.ErrForbidden):
		sendErr = badInput("forbidden_address", "The webhook URL leads to a private or local address, which deliveries may not reach.")
	}
	state := store.DeliveryPending
	if jobs.FailsForGood(ctx, sendErr) {
		state = store.DeliveryFailed
	}
	_, msg := jobs.ErrorCode(sendErr)
	w.recordAttempt(ctx, d.ID, state, status, msg)
	return sendErr
}

func (w *Worker) recordAttempt(ctx context.Context, id uuid.UUID, status string, responseStatus int, msg string) {
	if _, err := w.st.RecordAttempt(ctx, id, status, responseStatus, msg); err != nil && !errors.Is(err, store.ErrNotFound) {
		w.log.Error("record webhook attempt", "delivery", id, "err", err)
	}
}

// deliveryBody is what every attempt of a delivery sends, byte for byte.
func deliveryBody(d *store.Delivery) ([]byte, error) {
	return json.Marshal(struct {
		ID        uuid.UUID       `json:"id"`
		Event     string          `json:"event"`
		CreatedAt time.Time       `json:"createdAt"`
		Data      json.RawMessage `json:"data"`
	}{d.ID, d.Event, d.CreatedAt.UTC(), d.Payload})
}

// signature is the Lightbox-Signature header: when it was signed, and the
// HMAC-SHA256 of "<unix time>.<body>" keyed with the secret, so a receiver
// can check both the sender and the age of what it got.
func signature(secret string, at time.Time, body []byte) string {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// postDelivery sends one attempt and returns the endpoint's status, or 0
// when it did not answer.
func (w *Worker) postDelivery(ctx context.Context, hook *store.Webhook, id uuid.UUID, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(body))
	if err != nil {
		return 0, badInput("invalid_url", "The webhook URL is not valid.")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Lightbox-Webhooks")
	req.Header.Set("Lightbox-Delivery", id.String())
	req.Header.Set("Lightbox-Signature", signature(hook.Secret, time.Now(), body))
	resp, err := w.hooks.Do(req)
	if err != nil {
		if errors.Is(err, netguard.ErrForbidden) {
			return 0, err
		}
		return 0, &deliveryError{msg: "The endpoint could not be reached."}
	}
	defer resp.Body.Close()
	// Read a little so the connection can be reused; the body is not kept.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, &deliveryError{msg: fmt.Sprintf("The endpoint answered %s.", resp.Status)}
	}
	return resp.StatusCode, nil
}
