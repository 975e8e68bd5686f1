package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
)

// Webhook is an endpoint of a user's that is told of events.
type Webhook struct {
	ID         uuid.UUID  `db:"id"`
	UserID     uuid.UUID  `db:"user_id"`
	URL        string     `db:"url"`
	Events     Strings    `db:"events"`
	Secret     string     `db:"secret"`
	DisabledAt *time.Time `db:"disabled_at"`
	CreatedAt  time.Time  `db:"created_at"`
}

// Delivery is one event sent, or to be sent, to one webhook.
type Delivery struct {
	ID             uuid.UUID       `db:"id"`
	WebhookID      uuid.UUID       `db:"webhook_id"`
	Event          string          `db:"event"`
	Payload        json.RawMessage `db:"payload"`
	Status         string          `db:"status"`
	Attempts       int             `db:"attempts"`
	ResponseStatus *int            `db:"response_status"`
	LastError      *string         `db:"last_error"`
	CreatedAt      time.Time       `db:"created_at"`
	UpdatedAt      time.Time       `db:"updated_at"`
	DeliveredAt    *time.Time      `db:"delivered_at"`
}

// Delivery states.
const (
	DeliveryPending = "pending"
	DeliveryDone    = "done"
	DeliveryFailed  = "failed"
)

const (
	webhookColumns  = `w.id, w.user_id, w.url, w.events, w.secret, w.disabled_at, w.created_at`
	deliveryColumns = `d.id, d.webhook_id, d.event, d.payload, d.status, d.attempts, d.response_status, d.last_error,
	d.created_at, d.updated_at, d.delivered_at`
)

// ErrTooManyWebhooks is CreateWebhook's answer when the owner already has
// the most webhooks allowed.
var ErrTooManyWebhooks = errors.New("store: too many webhooks")

// CreateWebhook records w unless its owner already has max webhooks. The
// owner's row is locked for the count, so two creations at once cannot
// both pass it.
func (s *Store) CreateWebhook(ctx context.Context, w *Webhook, max int) error {
	return s.WithTx(ctx, func(tx *Store) error {
		if _, err := tx.db.ExecContext(ctx, `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`, w.UserID); err != nil {
			return err
		}
		var n int
		if err := tx.db.GetContext(ctx, &n, `SELECT count(*) FROM webhooks WHERE user_id = $1`, w.UserID); err != nil {
			return err
		}
		if n >= max {
			return ErrTooManyWebhooks
		}
		return tx.db.GetContext(ctx, w, `INSERT INTO webhooks AS w (id, user_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)
			RETURNING `+webhookColumns, w.ID, w.UserID, w.URL, w.Events, w.Secret)
	})
}

// Webhooks lists owner's webhooks, newest first.
func (s *Store) Webhooks(ctx context.Context, owner uuid.UUID, after *Cursor, limit int) (Page[Webhook], error) {
	var rows []Webhook
	afterTime, afterID := time.Now().Add(time.Hour), uuid.Max
	if after != nil {
		afterTime, afterID = after.Time, after.ID
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT `+webhookColumns+` FROM webhooks w
		WHERE w.user_id = $1 AND (w.created_at, w.id) < ($2, $3)
		ORDER BY w.created_at DESC, w.id DESC LIMIT $4`, owner, afterTime, afterID, limit+1)
	if err != nil {
		return Page[Webhook]{}, err
	}
	return pageOf(rows, limit, func(w Webhook) Cursor { return Cursor{Time: w.CreatedAt, ID: w.ID} }), nil
}

// Webhook returns owner's webhook id.
func (s *Store) Webhook(ctx context.Context, owner, id uuid.UUID) (*Webhook, error) {
	w := &Webhook{}
	err := s.db.GetContext(ctx, w, `SELECT `+webhookColumns+` FROM webhooks w WHERE w.id = $1 AND w.user_id = $2`, id, owner)
	return w, notFound(err)
}

// DeleteWebhook removes owner's webhook id and its deliveries. Jobs still
// waiting to deliver find nothing to send.
func (s *Store) DeleteWebhook(ctx context.Context, owner, id uuid.UUID) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM webhooks WHERE id = $1 AND user_id = $2`, id, owner)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// DisableWebhook stops deliveries to a webhook whose endpoint is gone, or
// with disabled false lets them go again.
func (s *Store) DisableWebhook(ctx context.Context, id uuid.UUID, disabled bool) error {
	_, err := s.db.ExecContext(ctx, `UPDATE webhooks SET disabled_at = CASE WHEN $2 THEN coalesce(disabled_at, now()) END
		WHERE id = $1`, id, disabled)
	return err
}

// SubscribedWebhooks lists the enabled webhooks subscribed to event of the
// user who owns project.
func (s *Store) SubscribedWebhooks(ctx context.Context, project uuid.UUID, event string) ([]Webhook, error) {
	var hooks []Webhook
	err := s.db.SelectContext(ctx, &hooks, `SELECT `+webhookColumns+` FROM webhooks w
		JOIN projects p ON p.owner_user_id = w.user_id
		WHERE p.id = $1 AND $2 = ANY(w.events) AND w.disabled_at IS NULL
		ORDER BY w.created_at, w.id`, project, event)
	return hooks, err
}

// AdminWebhooks lists the enabled webhooks of administrators subscribed
// to event: the service's own events, which belong to no project.
func (s *Store) AdminWebhooks(ctx context.Context, event string) ([]Webhook, error) {
	var hooks []Webhook
	err := s.db.SelectContext(ctx, &hooks, `SELECT `+webhookColumns+` FROM webhooks w
		JOIN users u ON u.id = w.user_id
		WHERE u.is_admin AND $1 = ANY(w.events) AND w.disabled_at IS NULL
		ORDER BY w.created_at, w.id`, event)
	return hooks, err
}

// AddDelivery records d, and reports whether it is new: a delivery
// already recorded under the same id is left alone, so reporting an event
// again adds nothing. The caller records a new delivery's job in the same
// transaction.
func (s *Store) AddDelivery(ctx context.Context, d Delivery) (bool, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO webhook_deliveries (id, webhook_id, event, payload)
		VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`, d.ID, d.WebhookID, d.Event, string(d.Payload))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// DeliveryWithHook returns a delivery and its webhook, whoever owns them;
// for the worker.
func (s *Store) DeliveryWithHook(ctx context.Context, id uuid.UUID) (*Delivery, *Webhook, error) {
	var row struct {
		Delivery
		Hook Webhook `db:"w"`
	}
	err := s.db.GetContext(ctx, &row, `SELECT `+deliveryColumns+`, w.id AS "w.id", w.user_id AS "w.user_id", w.url AS "w.url",
		w.events AS "w.events", w.secret AS "w.secret", w.disabled_at AS "w.disabled_at", w.created_at AS "w.created_at"
		FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE d.id = $1`, id)
	if err != nil {
		return nil, nil, notFound(err)
	}
	return &row.Delivery, &row.Hook, nil
}

// RecordAttempt records one attempt at a delivery: its new status, the
// endpoint's HTTP status when it answered, and what went wrong if anything.
func (s *Store) RecordAttempt(ctx context.Context, id uuid.UUID, status string, responseStatus int, lastError string) (*Delivery, error) {
	d := &Delivery{}
	err := s.db.GetContext(ctx, d, `UPDATE webhook_deliveries d SET status = $2, attempts = d.attempts + 1,
			response_status = nullif($3, 0), last_error = nullif($4, ''), updated_at = now(),
			delivered_at = CASE WHEN $2 = 'done' THEN now() ELSE d.delivered_at END
		WHERE d.id = $1 RETURNING `+deliveryColumns, id, status, responseStatus, lastError)
	return d, notFound(err)
}

// Delivery returns a delivery to one of owner's webhooks.
func (s *Store) Delivery(ctx context.Context, owner, id uuid.UUID) (*Delivery, error) {
	d := &Delivery{}
	err := s.db.GetContext(ctx, d, `SELECT `+deliveryColumns+` FROM webhook_deliveries d
		JOIN webhooks w ON w.id = d.webhook_id WHERE d.id = $1 AND w.user_id = $2`, id, owner)
	return d, notFound(err)
}

// Deliveries lists the deliveries of owner's webhook, newest first.
func (s *Store) Deliveries(ctx context.Context, owner, hook uuid.UUID, after *Cursor, limit int) (Page[Delivery], error) {
	var rows []Delivery
	afterTime, afterID := time.Now().Add(time.Hour), uuid.Max
	if after != nil {
		afterTime, afterID = after.Time, after.ID
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT `+deliveryColumns+` FROM webhook_deliveries d
		JOIN webhooks w ON w.id = d.webhook_id
		WHERE d.webhook_id = $1 AND w.user_id = $2 AND (d.created_at, d.id) < ($3, $4)
		ORDER BY d.created_at DESC, d.id DESC LIMIT $5`, hook, owner, afterTime, afterID, limit+1)
	if err != nil {
		return Page[Delivery]{}, err
	}
	return pageOf(rows, limit, func(d Delivery) Cursor { return Cursor{Time: d.CreatedAt, ID: d.ID} }), nil
}

// The row of an event webhooks hear of notes which of its states was told
// (see migration 0047): a batch's completed_at, an export's or a failed
// job's updated_at. A mark names the state it tells of, so it misses a row
// that has moved on since: that row's new state is still to be told.

// MarkBatchNotified notes that batch id's ending at completedAt was told.
func (s *Store) MarkBatchNotified(ctx context.Context, id uuid.UUID, completedAt time.Time) error {
	return s.markNotified(ctx, "batches", "completed_at", id, completedAt)
}

// MarkExportNotified notes that export id's state as of updatedAt was told.
func (s *Store) MarkExportNotified(ctx context.Context, id uuid.UUID, updatedAt time.Time) error {
	return s.markNotified(ctx, "exports", "updated_at", id, updatedAt)
}

// MarkFailureNotified notes that job id's failure as of updatedAt was told,
// or failed no asset and has nothing to tell.
func (s *Store) MarkFailureNotified(ctx context.Context, id uuid.UUID, updatedAt time.Time) error {
	return s.markNotified(ctx, "jobs", "updated_at", id, updatedAt)
}

func (s *Store) markNotified(ctx context.Context, table, state string, id uuid.UUID, at time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE `+table+` SET notified_at = $2 WHERE id = $1 AND `+state+` = $2`, id, at)
	return err
}

// UnnotifiedBatches lists at most limit batches, oldest first, that ended
// before cutoff and whose ending was never told.
func (s *Store) UnnotifiedBatches(ctx context.Context, cutoff time.Time, limit int) ([]Batch, error) {
	var out []Batch
	err := s.db.SelectContext(ctx, &out, `SELECT `+batchColumns+` FROM batches b
		WHERE b.completed_at IS NOT NULL AND b.notified_at IS DISTINCT FROM b.completed_at AND b.completed_at < $1
		ORDER BY b.completed_at LIMIT $2`, cutoff, limit)
	return out, err
}

// UnnotifiedExports lists at most limit exports, oldest first, that are
// done, failed or canceled as users see them, unchanged since cutoff, and
// whose state was never told. A cancel reaches the export's job first, so
// the job's last change counts too.
func (s *Store) UnnotifiedExports(ctx context.Context, cutoff time.Time, limit int) ([]Export, error) {
	var out []Export
	err := s.db.SelectContext(ctx, &out, exportRead+`
		WHERE e.status <> 'expired' AND e.notified_at IS DISTINCT FROM e.updated_at
		  AND (e.status IN ('done', 'failed', 'canceled') OR j.status = 'canceled')
		  AND greatest(e.updated_at, j.updated_at) < $1
		ORDER BY e.updated_at LIMIT $2`, cutoff, limit)
	return out, err
}

// UnnotifiedFailures lists at most limit failed jobs of assets, oldest
// first, that failed before cutoff and whose failure was never told.
func (s *Store) UnnotifiedFailures(ctx context.Context, cutoff time.Time, limit int) ([]Job, error) {
	var out []Job
	err := s.db.SelectContext(ctx, &out, `SELECT `+jobColumns+` FROM jobs j
		WHERE j.status = 'failed' AND j.asset_id IS NOT NULL AND j.notified_at IS DISTINCT FROM j.updated_at
		  AND j.updated_at < $1
		ORDER BY j.updated_at LIMIT $2`, cutoff, limit)
	return out, err
}
