// Package app holds the service's use cases: each file is one thing a
// user does (reserve uploads, finalize them, import, export, edit, change
// a gallery, delete, update a project), or a worker does on their behalf.
// A use case owns its transaction, its rules, the job rows it records
// through jobs.Insert and the events it publishes. Handlers in server/
// decode a request, call one use case and render its answer; the worker's
// handlers do a task's work and report through the job engine (jobs/).
//
// A refusal the caller can act on comes back as a typed error (FieldErrors,
// UnsupportedError, QuotaError, or one of store's); the server gives each
// its status and code.
package app

import (
	"context"
	"log/slog"

	"lightbox/blob"
	"lightbox/events"
	"lightbox/jobs"
	"lightbox/store"
)

// Blobs is what the use cases need of the blob store: uploads are checked,
// discarded copies deleted.
type Blobs interface {
	Stat(ctx context.Context, key string) (blob.Info, error)
	Delete(ctx context.Context, key string) error
}

// Config is what an App works with.
type Config struct {
	// Jobs records and hands over the use cases' jobs; its Store, which
	// hands a transaction's jobs over once committed, is the one used.
	Jobs  *jobs.Dispatcher
	Blobs Blobs
	// Signer signs the URLs uploads are sent to; only the server has one.
	Signer blob.URLSigner
	// Quotas are the limits of a user with none of their own (QUOTA_*).
	Quotas store.Limits
	// Events carries what the use cases changed to the project's open
	// views; nil publishes nothing.
	Events *events.Publisher
	// ThumbnailsFirst: Finalize queues each accepted photo's thumbnail
	// (asset:thumbnail) ahead of its ingest.
	ThumbnailsFirst bool
	// Log hears of work after a commit that failed and is repeated later.
	Log *slog.Logger
}

// App runs the use cases.
type App struct {
	Config
	store *store.Store
}

// New returns an App working with c. It hears the ends c.Jobs records
// (jobs.Hooks), to tell the webhooks subscribed to them.
func New(c Config) *App {
	if c.Log == nil {
		c.Log = slog.Default()
	}
	a := &App{Config: c, store: c.Jobs.Store}
	c.Jobs.Hooks = a
	return a
}
