package jobs

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"lightbox/store"
	"lightbox/tasks"
)

// ErrQueueUnavailable says Redis did not answer a question about a task.
var ErrQueueUnavailable = errors.New("the queue does not answer")

// Config is what a Dispatcher works with.
type Config struct {
	Store *store.Store
	Queue *asynq.Client
	// Inspector answers what Asynq holds of a task: to cancel, rerun and
	// reconcile.
	Inspector *asynq.Inspector
	// Redis holds the cancel marks (see MarkCanceling).
	Redis redis.UniversalClient
	// QueueRedis, when set, lets Reconcile register queues again after
	// Redis lost everything: a client announces a queue to the Inspector
	// only on its first enqueue to it, so the long-lived Queue never does
	// again.
	QueueRedis asynq.RedisConnOpt
	// Caps bound how many jobs of one batch, and of one user's batches in
	// each queue, are handed over at once; the rest wait in Postgres until
	// admitted (see Admit).
	Caps store.QueueCaps
	// ExportsPerUser, when above 0, is the most exports of one user
	// handed over at once (EXPORT_USER_RUNNING): the rest wait queued, in
	// the order asked for. It sets Caps.ByQueue for the exports' queue.
	ExportsPerUser int
	// Log hears of hand-overs that failed, which the sweep repeats.
	Log *slog.Logger
}

// Dispatcher is the job lifecycle both binaries share: it records jobs
// (Insert) and hands them to Asynq as the caps admit them, cancels them,
// runs them again, and repairs what an outage left behind (Reconcile). A
// worker adds a Tracker, which records each run's state.
type Dispatcher struct {
	Config
	// Hooks hear of the ends the engine records; New sets hooks that hear
	// nothing, which an App replaces with its own (app.New).
	Hooks Hooks
}

// Hooks hear, once committed, of the ends the engine records: a batch that
// ended (completedAt set), a job whose failure may have failed its asset.
// The engine calls them and knows nothing of who listens (webhooks do,
// through app.App). Each may be told the same end again, after a crash or
// by the sweep, and tells its listeners once.
type Hooks interface {
	BatchEnded(ctx context.Context, log *slog.Logger, b *store.Batch)
	AssetFailed(ctx context.Context, log *slog.Logger, a *store.Asset, job *store.Job)
	// NotifyMissed tells again, at most limit of each kind, ends committed
	// before that no hook recorded hearing; it returns how many.
	NotifyMissed(ctx context.Context, log *slog.Logger, before time.Time, limit int) (int, error)
}

// nobody hears the ends of a Dispatcher no App listens to.
type nobody struct{}

func (nobody) BatchEnded(context.Context, *slog.Logger, *store.Batch)              {}
func (nobody) AssetFailed(context.Context, *slog.Logger, *store.Asset, *store.Job) {}
func (nobody) NotifyMissed(context.Context, *slog.Logger, time.Time, int) (int, error) {
	return 0, nil
}

// New returns a Dispatcher working with c. Its Store is c.Store with a
// commit hook: every transaction it runs hands the jobs it recorded
// (Insert) to the queue once committed.
func New(c Config) *Dispatcher {
	d := &Dispatcher{Config: c, Hooks: nobody{}}
	if c.ExportsPerUser > 0 {
		d.Caps.ByQueue = maps.Clone(c.Caps.ByQueue)
		if d.Caps.ByQueue == nil {
			d.Caps.ByQueue = map[string]int{}
		}
		d.Caps.ByQueue[tasks.QueueOf(tasks.TypeExport)] = c.ExportsPerUser
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	d.Store = c.Store.WithHandOver(d.handOver)
	return d
}
