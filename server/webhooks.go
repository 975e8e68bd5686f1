package server

// Webhooks, as kept here and sent by the worker:
//
//   - A webhook belongs to the user who made it and hears of events in all
//     of that user's projects: batch.completed, export.updated (final
//     states only) and asset.failed. An administrator's may also hear
//     the service's own backup.failed.
//   - The secret signs every delivery. It is write-only: the answer to the
//     POST that creates the webhook carries it (the one given, or one made
//     when none is), and no later answer does.
//   - A URL whose host is an IP address is checked against the address
//     rules of URL imports at once; a host name is checked on every
//     delivery, after it resolves.
//   - A delivery's job has the delivery's id and is a webhook:deliver job
//     like any other; its project is the event's, and a ping has none.

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/netguard"
	"lightbox/ptr"
	"lightbox/store"
)

// Webhook limits.
const (
	maxWebhookURL    = 2048
	minWebhookSecret = 16
	maxWebhookSecret = 256
)

type webhookJSON struct {
	ID         uuid.UUID  `json:"id"`
	URL        string     `json:"url"`
	Events     []string   `json:"events"`
	Secret     string     `json:"secret,omitempty"` // only in the answer that creates it
	Disabled   bool       `json:"disabled"`
	DisabledAt *time.Time `json:"disabledAt"`
	CreatedAt  time.Time  `json:"createdAt"`
}

func toWebhookJSON(w store.Webhook) webhookJSON {
	return webhookJSON{ID: w.ID, URL: w.URL, Events: w.Events, Disabled: w.DisabledAt != nil, DisabledAt: utcPtr(w.DisabledAt),
		CreatedAt: w.CreatedAt.UTC()}
}

type deliveryJSON struct {
	ID             uuid.UUID  `json:"id"`
	JobID          uuid.UUID  `json:"jobId"`
	WebhookID      uuid.UUID  `json:"webhookId"`
	Event          string     `json:"event"`
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	ResponseStatus *int       `json:"responseStatus"`
	LastError      *string    `json:"lastError"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	DeliveredAt    *time.Time `json:"deliveredAt"`
}

func toDeliveryJSON(d store.Delivery) deliveryJSON {
	return deliveryJSON{ID: d.ID, JobID: d.ID, WebhookID: d.WebhookID, Event: d.Event, Status: d.Status, Attempts: d.Attempts,
		ResponseStatus: d.ResponseStatus, LastError: d.LastError, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(),
		DeliveredAt: utcPtr(d.DeliveredAt)}
}

func (s *Server) ownWebhook(c *gin.Context) (*store.Webhook, error) { return owned(c, s.store.Webhook) }

func (s *Server) listWebhooks(c *gin.Context) {
	cur, limit, err := pageParams(c)
	if err != nil {
		fail(c, err)
		return
	}
	page, err := s.store.Webhooks(c.Request.Context(), principal(c).ID, cur, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toPaged(page, toWebhookJSON))
}

func (s *Server) createWebhook(c *gin.Context) {
	var in struct {
		URL    string   `json:"url"`
		Events []string `json:"events"`
		Secret *string  `json:"secret"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	s.checkWebhookURL(errs, in.URL)
	events := checkWebhookEvents(errs, in.Events)
	// Left out, the use case makes one.
	if in.Secret != nil && (len(*in.Secret) < minWebhookSecret || len(*in.Secret) > maxWebhookSecret) {
		errs.Add("secret", "must be 16 to 256 characters, or left out to have one made")
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	if !principal(c).IsAdmin {
		for _, e := range events {
			if slices.Contains(app.AdminEvents, e) {
				fail(c, apiError(http.StatusForbidden, "forbidden", "%s is the service's own event: only an administrator's webhook may hear it.", e))
				return
			}
		}
	}
	w := &store.Webhook{ID: uuid.New(), UserID: principal(c).ID, URL: in.URL, Events: events, Secret: ptr.Value(in.Secret)}
	if err := s.app.CreateWebhook(c.Request.Context(), w); errors.Is(err, store.ErrTooManyWebhooks) {
		fail(c, apiError(http.StatusConflict, "too_many_webhooks", "You have %d webhooks, the most one user may have; delete one first.", app.MaxWebhooks))
		return
	} else if err != nil {
		fail(c, err)
		return
	}
	out := toWebhookJSON(*w)
	out.Secret = w.Secret
	c.JSON(http.StatusCreated, out)
}

// checkWebhookURL accepts an absolute http or https URL. An address
// written in it must pass the URL import rules now; names are checked on
// each delivery.
func (s *Server) checkWebhookURL(errs app.FieldErrors, raw string) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		errs.Add("url", "is required")
	case len(raw) > maxWebhookURL:
		errs.Add("url", "must be at most 2048 characters")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "":
		errs.Add("url", "must be an absolute http or https URL")
	default:
		if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
			if (netguard.Guard{Allow: s.cfg.DownloadAllow}).Check(ip) != nil {
				errs.Add("url", "leads to a private or local address, which webhooks may not reach")
			}
		}
	}
}

// checkWebhookEvents returns the events named, each once, in a stable order.
func checkWebhookEvents(errs app.FieldErrors, in []string) []string {
	if len(in) == 0 {
		errs.Add("events", "must name at least one of "+strings.Join(app.WebhookEvents, ", "))
		return nil
	}
	var out []string
	for _, e := range in {
		if !slices.Contains(app.WebhookEvents, e) {
			errs.Add("events", "must each be one of "+strings.Join(app.WebhookEvents, ", ")+"; "+e+" is not")
			return nil
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

func (s *Server) getWebhook(c *gin.Context) {
	w, err := s.ownWebhook(c)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toWebhookJSON(*w))
}

// deleteWebhook removes the webhook and its deliveries (app.DeleteWebhook).
func (s *Server) deleteWebhook(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.app.DeleteWebhook(c.Request.Context(), principal(c).ID, id); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// testWebhook sends the webhook a ping delivery, even when it is disabled:
// it is how a user checks a repaired endpoint, and a ping delivered
// enables the webhook again.
func (s *Server) testWebhook(c *gin.Context) {
	w, err := s.ownWebhook(c)
	if err != nil {
		fail(c, err)
		return
	}
	job, err := s.app.PingWebhook(c.Request.Context(), *w)
	if err != nil {
		fail(c, err)
		return
	}
	d, err := s.store.Delivery(c.Request.Context(), principal(c).ID, job.ID)
	if err != nil {
		fail(c, err) // deleted meanwhile
		return
	}
	c.JSON(http.StatusAccepted, toDeliveryJSON(*d))
}

func (s *Server) listDeliveries(c *gin.Context) {
	w, err := s.ownWebhook(c)
	if err != nil {
		fail(c, err)
		return
	}
	cur, limit, err := pageParams(c)
	if err != nil {
		fail(c, err)
		return
	}
	page, err := s.store.Deliveries(c.Request.Context(), principal(c).ID, w.ID, cur, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toPaged(page, toDeliveryJSON))
}
