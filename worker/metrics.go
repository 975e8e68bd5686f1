package worker

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"lightbox/jobs"
	"lightbox/metrics"
	"lightbox/tasks"
)

// taskMetrics are what this worker reports on METRICS_ADDR: how long each
// task took and how it ended, by task type.
type taskMetrics struct {
	reg      *prometheus.Registry
	duration *prometheus.HistogramVec
}

func newTaskMetrics() *taskMetrics {
	m := &taskMetrics{
		reg: metrics.NewRegistry(),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "lightbox_task_duration_seconds",
			Help: "Task runs by type and outcome (done, retry, failed, deferred), and how long they took.",
			// From a thumbnail to a large export.
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		}, []string{"type", "outcome"}),
	}
	m.reg.MustRegister(m.duration)
	return m
}

// measure is task middleware timing each run of a task.
func (m *taskMetrics) measure(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		start := time.Now()
		err := next.ProcessTask(ctx, t)
		m.duration.WithLabelValues(t.Type(), outcome(ctx, err)).Observe(time.Since(start).Seconds())
		return err
	})
}

// outcome names what Asynq does next with a run that returned err.
func outcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "done"
	case !tasks.IsFailure(err) || jobs.IsInterrupted(err):
		return "deferred" // back in the queue without spending a retry
	case jobs.FailsForGood(ctx, err):
		return "failed"
	}
	return "retry"
}

// MetricsHandler answers a scrape of this worker's metrics, to holders of
// METRICS_TOKEN when one is set. Run serves it on METRICS_ADDR.
func (w *Worker) MetricsHandler() http.Handler {
	return metrics.Protect(w.cfg.MetricsToken, metrics.Handler(w.metrics.reg))
}

// serveMetrics serves MetricsHandler on METRICS_ADDR, when one is set,
// until stop is called.
func (w *Worker) serveMetrics(ctx context.Context) (stop func(), err error) {
	if w.cfg.MetricsAddr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", w.cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("METRICS_ADDR: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := metrics.Serve(ctx, ln, w.MetricsHandler(), w.log); err != nil {
			w.log.Error("metrics server stopped", "err", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}
