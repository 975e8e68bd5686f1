package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// Webhook event names.
const (
	EventBatchCompleted = "batch.completed"
	EventExportUpdated  = "export.updated"
	EventAssetFailed    = "asset.failed"
	EventBackupFailed   = "backup.failed"
	EventPing           = "ping"
)

// WebhookEvents are the events a webhook may subscribe to.
var WebhookEvents = []string{EventBatchCompleted, EventExportUpdated, EventAssetFailed, EventBackupFailed}

// AdminEvents are the service's own events, of no project: only an
// administrator's webhook may subscribe to them.
var AdminEvents = []string{EventBackupFailed}

// deliveryNamespace makes delivery ids from what they report (UUIDv5).
var deliveryNamespace = uuid.MustParse("4f0c7c55-8b1e-4d6a-9a53-1f2d6c0e9b7a")

// DeliveryID is the id of the delivery to hook of event about subject in
// state: the same report made twice names the same delivery.
func DeliveryID(hook uuid.UUID, event, subject, state string) uuid.UUID {
	return uuid.NewSHA1(deliveryNamespace, []byte(hook.String()+"|"+event+"|"+subject+"|"+state))
}

// BatchEnded tells the owner's webhooks that batch b has ended (its
// completedAt is set); the same ending reported again delivers nothing new.
func (a *App) BatchEnded(ctx context.Context, log *slog.Logger, b *store.Batch) {
	if b.CompletedAt == nil {
		return
	}
	// The batch as the API shows it, its end in UTC as every time it sends.
	data := BatchJSONOf(b)
	completed := b.CompletedAt.UTC()
	data.CompletedAt = &completed
	a.notify(ctx, log, b.ProjectID, EventBatchCompleted, b.ID.String(), b.Status+"@"+b.CompletedAt.UTC().Format(time.RFC3339Nano), data,
		func(tx *store.Store) error { return tx.MarkBatchNotified(ctx, b.ID, *b.CompletedAt) })
}

// ExportChanged tells the owner's webhooks of an export that reached a
// final state: done, failed, canceled or expired.
func (a *App) ExportChanged(ctx context.Context, log *slog.Logger, e *store.Export) {
	if e.Status == store.JobQueued || e.Status == store.JobRunning {
		return
	}
	data := struct {
		ID        uuid.UUID       `json:"id"`
		ProjectID uuid.UUID       `json:"projectId"`
		BatchID   *uuid.UUID      `json:"batchId"`
		Preset    string          `json:"preset"`
		Status    store.JobStatus `json:"status"`
		ByteSize  *int64          `json:"byteSize"`
		Error     *jobs.Failure   `json:"error"`
		UpdatedAt time.Time       `json:"updatedAt"`
	}{e.ID, e.ProjectID, e.BatchID, e.Preset, e.Status, e.ByteSize, jobs.FailureOf(e.ErrorCode, e.ErrorMessage), e.UpdatedAt.UTC()}
	a.notify(ctx, log, e.ProjectID, EventExportUpdated, e.ID.String(), string(e.Status)+"@"+e.UpdatedAt.UTC().Format(time.RFC3339Nano), data,
		func(tx *store.Store) error { return tx.MarkExportNotified(ctx, e.ID, e.UpdatedAt) })
}

// AssetFailed tells the owner's webhooks that job's failure failed asset,
// when it did: the job failed for good and its type fails the asset. Any
// other failure of job is only marked told, so the sweep passes over it.
func (a *App) AssetFailed(ctx context.Context, log *slog.Logger, asset *store.Asset, job *store.Job) {
	if job.Status != store.JobFailed {
		return
	}
	mark := func(tx *store.Store) error { return tx.MarkFailureNotified(ctx, job.ID, job.UpdatedAt) }
	if asset.Status != store.AssetFailed || !tasks.FailsAsset(job.Type) {
		if err := mark(a.store); err != nil {
			log.Warn("mark job failure told", "job", job.ID, "err", err)
		}
		return
	}
	data := struct {
		AssetID   uuid.UUID     `json:"assetId"`
		ProjectID uuid.UUID     `json:"projectId"`
		Filename  string        `json:"filename"`
		JobID     uuid.UUID     `json:"jobId"`
		JobType   string        `json:"jobType"`
		BatchID   *uuid.UUID    `json:"batchId"`
		Error     *jobs.Failure `json:"error"`
	}{asset.ID, asset.ProjectID, asset.Filename, job.ID, job.Type, job.BatchID, jobs.FailureOf(asset.ErrorCode, asset.ErrorMessage)}
	// A job run again after failing ends with a later updatedAt: a new report.
	a.notify(ctx, log, asset.ProjectID, EventAssetFailed, asset.ID.String(), job.ID.String()+"@"+job.UpdatedAt.UTC().Format(time.RFC3339Nano), data, mark)
}

// MaxWebhooks is how many webhooks one user may have.
const MaxWebhooks = 25

// CreateWebhook records w for its user, with a secret made for it when w
// has none: every delivery is signed. A user with MaxWebhooks already is
// refused (store.ErrTooManyWebhooks): each event is a delivery to every
// one of them.
func (a *App) CreateWebhook(ctx context.Context, w *store.Webhook) error {
	if w.Secret == "" {
		w.Secret = store.NewSecret("whsec_")
	}
	return a.store.CreateWebhook(ctx, w, MaxWebhooks)
}

// DeleteWebhook removes owner's webhook id and its deliveries; a delivery
// job still waiting finds nothing to send and ends.
func (a *App) DeleteWebhook(ctx context.Context, owner, id uuid.UUID) error {
	return a.store.DeleteWebhook(ctx, owner, id)
}

// PingWebhook records a ping delivery to hook, and returns its job.
func (a *App) PingWebhook(ctx context.Context, hook store.Webhook) (*store.Job, error) {
	data := struct {
		WebhookID uuid.UUID `json:"webhookId"`
	}{hook.ID}
	var added []store.Job
	err := a.store.WithTx(ctx, func(tx *store.Store) error {
		var err error
		added, err = deliver(ctx, tx, []store.Webhook{hook}, uuid.Nil, EventPing, uuid.NewString(), "", data)
		return err
	})
	if err != nil || len(added) == 0 {
		return nil, err
	}
	return &added[0], nil
}

// notify records a delivery of event to each webhook of project's owner
// subscribed to it and, in the same transaction, marks the event told
// with mark. An event nobody subscribed to is marked all the same.
// Failures are logged: the event itself is recorded, and the sweep tells
// again what was not marked (NotifyMissed).
func (a *App) notify(ctx context.Context, log *slog.Logger, project uuid.UUID, event, subject, state string, data any,
	mark func(tx *store.Store) error) {
	hooks, err := a.store.SubscribedWebhooks(ctx, project, event)
	if err != nil {
		log.Warn("find webhooks", "event", event, "project", project, "err", err)
		return
	}
	err = a.store.WithTx(ctx, func(tx *store.Store) error {
		if _, err := deliver(ctx, tx, hooks, project, event, subject, state, data); err != nil {
			return err
		}
		return mark(tx)
	})
	if err != nil {
		log.Warn("record webhook deliveries", "event", event, "subject", subject, "err", err)
	}
}

// NotifyMissed tells again the events of before that were never marked
// told: a crash or a failed write came between the commit of their state
// and the record of their deliveries, and the state, once committed, is
// not written again. It takes at most limit batches, exports and failed
// jobs each, oldest first, and returns how many events it told.
func (a *App) NotifyMissed(ctx context.Context, log *slog.Logger, before time.Time, limit int) (int, error) {
	var errs []error
	batches, err := a.store.UnnotifiedBatches(ctx, before, limit)
	errs = append(errs, err)
	for i := range batches {
		a.BatchEnded(ctx, log, &batches[i])
	}
	exports, err := a.store.UnnotifiedExports(ctx, before, limit)
	errs = append(errs, err)
	for i := range exports {
		a.ExportChanged(ctx, log, &exports[i])
	}
	failures, err := a.store.UnnotifiedFailures(ctx, before, limit)
	errs = append(errs, err)
	for i := range failures {
		j := &failures[i]
		asset, err := a.store.AssetByID(ctx, *j.AssetID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		a.AssetFailed(ctx, log, asset, j)
	}
	return len(batches) + len(exports) + len(failures), errors.Join(errs...)
}

// deliver records, in tx, a delivery of one report to each of hooks with
// its job, which shares the delivery's id, and returns the jobs of the
// deliveries that are new: the same report made again adds nothing.
func deliver(ctx context.Context, tx *store.Store, hooks []store.Webhook, project uuid.UUID,
	event, subject, state string, data any) ([]store.Job, error) {
	payload, err := json.Marshal(data)
	if err != nil {
		// Report data are plain structs of strings, numbers and ids.
		panic("app: encode " + event + " data: " + err.Error())
	}
	var sends []tasks.JobArgs
	for _, h := range hooks {
		id := DeliveryID(h.ID, event, subject, state)
		added, err := tx.AddDelivery(ctx, store.Delivery{ID: id, WebhookID: h.ID, Event: event, Payload: payload})
		if err != nil {
			return nil, err
		}
		if added {
			sends = append(sends, tasks.WebhookPayload{Job: tasks.Job{JobID: id, ProjectID: project}, DeliveryID: id})
		}
	}
	return jobs.InsertMany(ctx, tx, sends)
}
