// Package worker provides Lightbox's background processor: an Asynq server
// on weighted queues, its ServeMux of task handlers, and the middleware every
// task runs through (logging, panics to errors).
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"lightbox/app"
	"lightbox/blob"
	"lightbox/chain"
	"lightbox/config"
	"lightbox/embedding"
	"lightbox/events"
	"lightbox/faces"
	"lightbox/imaging"
	"lightbox/jobs"
	"lightbox/redisconn"
	"lightbox/store"
	"lightbox/tasks"
)

// Deps are what the worker is wired with.
type Deps struct {
	Config *config.Config
	Store  *store.Store
	Blobs  blob.Store
	Redis  *redis.Client
	// Engine does the pixel work of ingest.
	Engine imaging.Engine
	// Embedder makes the vectors of asset:embedding. When it calls an outside
	// provider, EmbedRatePerMinute bounds the calls of all workers together.
	Embedder           embedding.Embedder
	EmbedRatePerMinute int
	// Faces finds the faces of asset:faces; nil when this worker has no
	// provider. FacesRatePerMinute bounds the calls of all workers together.
	Faces              faces.Provider
	FacesRatePerMinute int
	// Flusher signs and publishes the attestation chain.
	Flusher *chain.Flusher
	Logger  *slog.Logger
}

// Worker processes tasks until stopped.
type Worker struct {
	cfg   *config.Config
	st    *store.Store
	rdb   *redis.Client
	log   *slog.Logger
	blobs blob.Store
	queue *asynq.Client
	srv   *asynq.Server
	mux   *asynq.ServeMux
	sched *asynq.Scheduler

	engine     imaging.Engine
	embedder   embedding.Embedder
	limiter    *redis_rate.Limiter
	embedLimit *redis_rate.Limit
	faces      faces.Provider
	facesLimit *redis_rate.Limit
	flusher    *chain.Flusher
	jobs       *jobs.Dispatcher
	app        *app.App // the use cases a task carries on (an import's finalize, an edit's save)
	events     *events.Publisher
	fetcher    *http.Client
	hooks      *http.Client // posts webhook deliveries
	metrics    *taskMetrics
	// tracker records the state of each run in its job's row, and
	// repairs what crashes and outages leave behind.
	tracker *jobs.Tracker
	// ahead are the queues this worker serves above faces: a face scan
	// steps aside while any of them has work waiting (see findFaces).
	ahead []string
	// exportYieldsTo are the queues whose waiting work an export steps
	// aside for between its steps: all this worker serves above low.
	exportYieldsTo []string

	// ledgerOutages counts the flushes in a row that found the ledger down.
	ledgerOutages atomic.Int64

	// running counts the handlers under way: see Run.
	running sync.WaitGroup
}

// New builds the worker and its handler table.
func New(d Deps) (*Worker, error) {
	conn, err := redisconn.Parse(d.Config.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	redisOpt := conn.Asynq()
	w := &Worker{cfg: d.Config, st: d.Store, rdb: d.Redis, log: d.Logger, blobs: d.Blobs, queue: asynq.NewClient(redisOpt),
		engine: d.Engine, embedder: d.Embedder, faces: d.Faces, limiter: redis_rate.NewLimiter(d.Redis), flusher: d.Flusher,
		events: events.NewPublisher(d.Redis, events.PublisherOptions{}), fetcher: safeClient(d.Config.DownloadAllow),
		hooks: webhookClient(d.Config.DownloadAllow)}
	if d.EmbedRatePerMinute > 0 {
		l := redis_rate.PerMinute(d.EmbedRatePerMinute)
		w.embedLimit = &l
	}
	if d.FacesRatePerMinute > 0 {
		l := redis_rate.PerMinute(d.FacesRatePerMinute)
		w.facesLimit = &l
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	w.jobs = jobs.New(jobs.Config{Store: d.Store, Queue: w.queue, Inspector: asynq.NewInspector(redisOpt),
		Redis: d.Redis, QueueRedis: redisOpt, Log: w.log,
		Caps: store.QueueCaps{Batch: d.Config.BatchWindow, User: d.Config.UserWindow}, ExportsPerUser: d.Config.ExportUserRunning})
	// Jobs recorded in its transactions are handed to the queue once committed.
	w.st = w.jobs.Store
	w.app = app.New(app.Config{Jobs: w.jobs, Blobs: d.Blobs, Events: w.events, ThumbnailsFirst: d.Config.ThumbnailsFirst, Log: w.log})
	w.srv = asynq.NewServer(redisOpt, asynq.Config{
		Concurrency:     d.Config.WorkerConcurrency,
		Queues:          served(d.Config),
		StrictPriority:  d.Config.StrictPriority,
		ShutdownTimeout: d.Config.ShutdownTimeout,
		Logger:          asynqLogger{w.log},
		RetryDelayFunc:  tasks.RetryDelay,
		IsFailure:       tasks.IsFailure,
		// An idle worker polls for new work this often; the default (1 s)
		// would add up to a second before a fresh upload is touched.
		TaskCheckInterval: 200 * time.Millisecond,
		// A task due later (a cluster run after CLUSTER_DELAY, a retry)
		// is moved to its queue this often; the default (5 s) would add
		// up to five seconds to each.
		DelayedTaskCheckInterval: time.Second,
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
			w.log.Warn("task failed", "type", t.Type(), "err", err)
		}),
	})
	for q := range served(d.Config) {
		if q != tasks.QueueFaces {
			w.ahead = append(w.ahead, q)
		}
		if q != tasks.QueueFaces && q != tasks.QueueLow {
			w.exportYieldsTo = append(w.exportYieldsTo, q)
		}
	}
	w.metrics = newTaskMetrics()
	w.tracker = w.jobs.Tracker(jobs.TrackerConfig{Events: w.events, Queues: slices.Sorted(maps.Keys(d.Config.QueueWeights)),
		WaitOut: w.outage, Log: w.log, ReconcileAfter: d.Config.SweepReconcileAfter})
	w.mux = asynq.NewServeMux()
	w.mux.Use(w.countRunning, w.metrics.measure, w.logTasks, recoverPanics, w.trackJobs, w.waitOutOutages)
	if err := w.routes(); err != nil {
		return nil, err
	}

	// Every worker runs the scheduler; Unique keeps one sweep per period
	// however many workers there are.
	w.sched = asynq.NewScheduler(redisOpt, &asynq.SchedulerOpts{Logger: asynqLogger{w.log}})
	if _, err := w.sched.Register("@every "+d.Config.SweepInterval.String(), tasks.NewSweep(),
		asynq.Unique(d.Config.SweepInterval)); err != nil {
		return nil, fmt.Errorf("schedule sweep: %w", err)
	}
	// The scheduled backup: every worker's scheduler fires in the same
	// second, and Unique lets one enqueue through. Its lock lasts half the
	// shortest period, so a run that failed (archived, holding it) never
	// keeps the next period's out; BackupLock stops a second run while one
	// overruns.
	if b := d.Config.Backups; b.Schedule != "" {
		if _, err := w.sched.Register(b.Schedule, tasks.NewBackup(), asynq.Unique(b.Period/2)); err != nil {
			return nil, fmt.Errorf("schedule backups: %w", err)
		}
	}
	return w, nil
}

// handlers holds one handler per task type of the task table
// (tasks/tasks.go). Each handler's file adds it with handle, beside the
// handler itself; New refuses to start when a type has none.
var handlers = map[string]func(w *Worker, ctx context.Context, t *asynq.Task) error{}

// handle makes h the handler of task type typ.
func handle(typ string, h func(w *Worker, ctx context.Context, t *asynq.Task) error) {
	handlers[typ] = h
}

// routes puts every handler on the mux.
func (w *Worker) routes() error {
	for _, typ := range tasks.Types() {
		if handlers[typ] == nil {
			return fmt.Errorf("no handler for task type %s", typ)
		}
	}
	for typ, h := range handlers {
		w.mux.HandleFunc(typ, func(ctx context.Context, t *asynq.Task) error { return h(w, ctx, t) })
	}
	return nil
}

// Handle adds a handler for a task type beside the built-in ones, behind
// the same middleware; for tools and benchmarks.
func (w *Worker) Handle(typ string, h asynq.Handler) { w.mux.Handle(typ, h) }

// Handler is the worker's whole task table with its middleware, for tests
// that run tasks without a server. It returns once the task's job states
// are written.
func (w *Worker) Handler() asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		err := w.mux.ProcessTask(ctx, t)
		w.tracker.Sync()
		return err
	})
}

// served is the weights of the queues this worker serves (WORKER_QUEUES),
// all of them when it names none.
func served(c *config.Config) map[string]int {
	if len(c.WorkerQueues) == 0 {
		return c.QueueWeights
	}
	out := make(map[string]int, len(c.WorkerQueues))
	for _, q := range c.WorkerQueues {
		out[q] = c.QueueWeights[q]
	}
	return out
}

// ErrHandlersRunning is Run's answer when handlers Asynq gave up on at
// shutdown were still running abandonedGrace later: their tasks are back in
// the queue, but they may still be inside libvips.
var ErrHandlersRunning = errors.New("tasks still running after the shutdown; they were handed back to the queue")

// abandonedGrace is how long Run waits, after the shutdown timeout, for the
// handlers Asynq gave up on to notice their context has ended.
const abandonedGrace = 30 * time.Second

// Run processes tasks until ctx ends, then stops fetching, waits for running
// tasks up to the shutdown timeout and hands unfinished ones back to Redis.
// Asynq does not wait for the handlers of the tasks it hands back, only
// cancels their context; Run does, so their job states are written and
// nothing of them runs once it returns.
func (w *Worker) Run(ctx context.Context) error {
	stopMetrics, err := w.serveMetrics(ctx)
	if err != nil {
		return err
	}
	defer stopMetrics()
	if err := w.srv.Start(w.mux); err != nil {
		return err
	}
	if err := w.sched.Start(); err != nil {
		w.srv.Shutdown()
		return err
	}
	w.log.Info("worker started", "concurrency", w.cfg.WorkerConcurrency, "queues", w.cfg.QueueWeights)
	watching := make(chan struct{})
	go func() { defer close(watching); w.tracker.Watch(ctx) }()
	<-ctx.Done()
	<-watching
	w.tracker.Stopping()
	w.sched.Shutdown()
	w.srv.Shutdown()
	ended := make(chan struct{})
	go func() { w.running.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(abandonedGrace):
		return ErrHandlersRunning
	}
	w.tracker.Close()
	w.jobs.Inspector.Close()
	return w.queue.Close()
}

// countRunning keeps count of the handlers under way for Run. Asynq starts
// none once its Shutdown has begun, so the count never rises under Run's
// wait.
func (w *Worker) countRunning(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		w.running.Add(1)
		defer w.running.Done()
		return next.ProcessTask(ctx, t)
	})
}

// logTasks logs each run's end: an error as a warning, a success at debug
// level only, since the task metrics and the job rows already count every
// success and one line per task at info level costs more than a no-op task.
func (w *Worker) logTasks(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		start := time.Now()
		err := next.ProcessTask(ctx, t)
		level, msg := slog.LevelDebug, "task done"
		if err != nil {
			level, msg = slog.LevelWarn, "task error"
		}
		if !w.log.Enabled(ctx, level) {
			return err
		}
		id, _ := asynq.GetTaskID(ctx)
		retry, _ := asynq.GetRetryCount(ctx)
		attrs := []any{"type", t.Type(), "taskId", id, "attempt", retry + 1, "durationMs", time.Since(start).Milliseconds()}
		if err != nil {
			attrs = append(attrs, "err", err)
		}
		w.log.Log(ctx, level, msg, attrs...)
		return err
	})
}

// trackJobs records each run of a task that has a job row in the job's
// row (jobs.Tracker.Run).
func (w *Worker) trackJobs(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		return w.tracker.Run(ctx, t, next)
	})
}

// recoverPanics turns a handler panic into an error, so one bad task fails
// alone and the worker goes on.
func recoverPanics(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) (err error) {
		defer func() {
			if r := recover(); r != nil {
				slog.Error("task panic", "type", t.Type(), "panic", r, "stack", string(debug.Stack()))
				err = fmt.Errorf("panic in %s: %v", t.Type(), r)
			}
		}()
		return next.ProcessTask(ctx, t)
	})
}

// asynqLogger sends Asynq's own logs through slog.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
