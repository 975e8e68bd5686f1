package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	asynqmetrics "github.com/hibiken/asynq/x/metrics"
	"github.com/prometheus/client_golang/prometheus"

	"lightbox/abuse/password"
	"lightbox/chain"
	"lightbox/metrics"
	"lightbox/store"
)

// serverMetrics are what /metrics reports of this server: its requests, its
// refusals, its streams, and the queue and chain it shares with the others.
// No label names a user.
type serverMetrics struct {
	handler  http.Handler // answers a scrape
	requests *prometheus.HistogramVec
	refused  *prometheus.CounterVec
	// verifications counts chain verify calls by outcome: ran, kept (an
	// outcome kept for the chain as it stands), busy (refused while the
	// user's own verification ran).
	verifications *prometheus.CounterVec
}

func newServerMetrics(s *Server) *serverMetrics {
	reg := metrics.NewRegistry()
	m := &serverMetrics{
		handler: metrics.Handler(reg),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lightbox_http_request_duration_seconds",
			Help:    "HTTP requests by method, route template and status, and how long they took.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route", "status"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lightbox_rate_limit_refusals_total",
			Help: "Requests refused with 429, by the budget they exceeded.",
		}, []string{"limit"}),
		verifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lightbox_chain_verifications_total",
			Help: "Chain verify calls by outcome: ran, kept (answered from a verification of the chain as it stands), busy.",
		}, []string{"outcome"}),
	}
	for _, outcome := range []string{"ran", "kept", "busy"} {
		m.verifications.WithLabelValues(outcome) // 0 from the start, not absent
	}
	reg.MustRegister(m.requests, m.refused, m.verifications,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lightbox_sse_connections",
			Help: "Live progress streams open on this server.",
		}, func() float64 { return float64(s.hub.Subscribers()) }),
		chainLag{s.store},
		backupRuns{s.store},
		passwordHashes{"viewer": s.viewerHashes, "owner": s.ownerHashes},
	)
	if s.inspector != nil {
		// asynq_queue_size, asynq_queue_latency_seconds, asynq_tasks_processed_total, ...
		reg.MustRegister(asynqmetrics.NewQueueMetricsCollector(s.inspector))
	}
	return m
}

// serveMetrics answers a scrape.
func (s *Server) serveMetrics(c *gin.Context) {
	s.metrics.handler.ServeHTTP(c.Writer, c.Request)
}

// metricsAccess lets in a scraper with METRICS_TOKEN, and otherwise only an
// administrator, as the admin routes do.
func (s *Server) metricsAccess(c *gin.Context) {
	if metrics.TokenMatches(c.GetHeader("Authorization"), s.cfg.MetricsToken) {
		c.Next()
		return
	}
	p, err := s.principalFrom(c)
	if err != nil {
		fail(c, err)
		return
	}
	c.Set(ctxPrincipal, p)
	requireAdmin(c)
}

// measure records each request under its route template, never its path:
// ids in paths would make a series per asset.
func (s *Server) measure(c *gin.Context) {
	start := time.Now()
	c.Next()
	route, method := route(c), c.Request.Method
	if route == "" {
		route = "unmatched"
		if !knownMethods[method] {
			method = "other"
		}
	}
	s.metrics.requests.WithLabelValues(method, route, strconv.Itoa(c.Writer.Status())).Observe(time.Since(start).Seconds())
}

var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// refusedBy counts a 429; key is "<budget>:<user>", and only the budget
// becomes a label.
func (m *serverMetrics) refusedBy(key string) {
	limit, _, _ := strings.Cut(key, ":")
	m.refused.WithLabelValues(limit).Inc()
}

// chainLag reports the attestations waiting to enter the chain, counted in
// Postgres at scrape time.
type chainLag struct{ st *store.Store }

var chainLagDesc = prometheus.NewDesc("lightbox_chain_pending_attestations",
	"Attestations queued but not yet in the chain, by state (pending, signing, failed).", []string{"state"}, nil)

func (l chainLag) Describe(ch chan<- *prometheus.Desc) { ch <- chainLagDesc }

func (l chainLag) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	q, err := chain.CountQueue(ctx, l.st)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(chainLagDesc, err)
		return
	}
	for state, n := range map[string]int64{"pending": q.Pending, "signing": q.Signing, "failed": q.Failed} {
		ch <- prometheus.MustNewConstMetric(chainLagDesc, prometheus.GaugeValue, float64(n), state)
	}
}

// backupRuns reports the scheduled backups (BACKUP_SCHEDULE), read from
// backup_runs at scrape time: when the last one succeeded, its size and
// how long it took, and how many failed. A service with none reports
// only the failures' 0, so an alert on the success's age stays quiet
// where backups are off.
type backupRuns struct{ st *store.Store }

var (
	backupSuccessDesc = prometheus.NewDesc("lightbox_backup_last_success_timestamp_seconds",
		"When the last scheduled backup that succeeded finished, in Unix seconds.", nil, nil)
	backupBytesDesc = prometheus.NewDesc("lightbox_backup_last_success_bytes",
		"The size of everything the last successful scheduled backup holds.", nil, nil)
	backupDurationDesc = prometheus.NewDesc("lightbox_backup_last_success_duration_seconds",
		"How long the last successful scheduled backup took.", nil, nil)
	backupFailuresDesc = prometheus.NewDesc("lightbox_backup_failures_total",
		"Scheduled backups that failed.", nil, nil)
)

func (b backupRuns) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{backupSuccessDesc, backupBytesDesc, backupDurationDesc, backupFailuresDesc} {
		ch <- d
	}
}

func (b backupRuns) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	failed, err := b.st.CountBackupRuns(ctx, store.BackupFailed)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(backupFailuresDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(backupFailuresDesc, prometheus.CounterValue, float64(failed))
	last, err := b.st.LastBackupRun(ctx, store.BackupDone)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(backupSuccessDesc, err)
		return
	}
	if last == nil || last.FinishedAt == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(backupSuccessDesc, prometheus.GaugeValue, float64(last.FinishedAt.UnixMilli())/1000)
	ch <- prometheus.MustNewConstMetric(backupBytesDesc, prometheus.GaugeValue, float64(last.Bytes))
	ch <- prometheus.MustNewConstMetric(backupDurationDesc, prometheus.GaugeValue, last.FinishedAt.Sub(last.StartedAt).Seconds())
}

// passwordHashes reports the password hash pools by caller: viewer (a
// gallery password tried) or owner (one set).
type passwordHashes map[string]*password.Pool

var passwordMetrics = []struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(*password.Pool) int64
}{
	{prometheus.NewDesc("lightbox_password_hashes_total", "Password hashes (argon2id) this server started, by caller.",
		[]string{"caller"}, nil), prometheus.CounterValue, (*password.Pool).Ran},
	{prometheus.NewDesc("lightbox_password_hashes_waited_total", "Password hashes that waited in line for a slot, by caller.",
		[]string{"caller"}, nil), prometheus.CounterValue, (*password.Pool).Waited},
	{prometheus.NewDesc("lightbox_password_hashes_refused_total", "Password hashes refused with 429 busy, the line for a slot being full, by caller.",
		[]string{"caller"}, nil), prometheus.CounterValue, (*password.Pool).Refused},
	{prometheus.NewDesc("lightbox_password_hashes_waiting", "Password hashes waiting in line for a slot now, by caller.",
		[]string{"caller"}, nil), prometheus.GaugeValue, func(p *password.Pool) int64 { return int64(p.Waiting()) }},
	{prometheus.NewDesc("lightbox_password_hash_slots", "Password hashes this server computes at once, by caller (PASSWORD_HASHES, PASSWORD_OWNER_HASHES).",
		[]string{"caller"}, nil), prometheus.GaugeValue, func(p *password.Pool) int64 { return int64(p.Slots()) }},
}

func (h passwordHashes) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range passwordMetrics {
		ch <- m.desc
	}
}

func (h passwordHashes) Collect(ch chan<- prometheus.Metric) {
	for caller, p := range h {
		for _, m := range passwordMetrics {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, float64(m.value(p)), caller)
		}
	}
}
