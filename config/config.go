// Package config provides Lightbox's settings, read from the environment in
// one place and validated at start-up with every problem reported at once.
package config

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"lightbox/abuse/password"
	"lightbox/redisconn"
	"lightbox/tasks"
)

// Config is every setting of the server, the worker and the CLI. Each field
// names the variable it comes from in its comment.
type Config struct {
	DatabaseURL string // DATABASE_URL
	RedisURL    string // REDIS_URL: redis://, rediss:// or redis-sentinel:// (see redisconn)
	HTTPAddr    string // HTTP_ADDR
	PublicURL   string // PUBLIC_URL, the absolute base of links handed to clients
	DataDir     string // DATA_DIR, blobs and development keys live below it

	LogFormat string     // LOG_FORMAT: json or text
	LogLevel  slog.Level // LOG_LEVEL: debug, info, warn, error

	WorkerConcurrency int            // WORKER_CONCURRENCY, default twice the number of cores: a task waits on Postgres, the blob store and Redis part of its time
	QueueWeights      map[string]int // QUEUE_WEIGHTS, "thumbnails=600,critical=18,default=9,low=3,faces=1"; see weights for queues left out
	ThumbnailsFirst   bool           // THUMBNAILS_FIRST: finalize queues a thumbnail of each photo ahead of its ingest
	// WorkerQueues are the queues this worker serves (WORKER_QUEUES, a
	// comma list of QUEUE_WEIGHTS' names); none means all of them. A
	// deployment can keep a worker for thumbnails alone, say.
	WorkerQueues    []string
	StrictPriority  bool          // QUEUE_STRICT_PRIORITY
	ShutdownTimeout time.Duration // SHUTDOWN_TIMEOUT
	BatchWindow     int           // BATCH_WINDOW, the most tasks of one batch in the queue at once; 0 for no limit
	UserWindow      int           // USER_WINDOW, the most tasks of one user's batches in each queue at once; 0 for no limit
	// ExportUserRunning is how many of one user's exports run at once
	// (EXPORT_USER_RUNNING); the rest wait queued in the order asked for.
	// 0 leaves exports under USER_WINDOW alone.
	ExportUserRunning int

	MaxBodyBytes      int64         // MAX_BODY_BYTES, for JSON request bodies
	BodyReadTimeout   time.Duration // BODY_READ_TIMEOUT, the longest a request body may send nothing (uploads included)
	SSEHeartbeat      time.Duration // SSE_HEARTBEAT, the comment that keeps idle streams open
	SSEStreamsPerUser int           // SSE_STREAMS_PER_USER, event streams one user may hold open on one server
	SessionTTL        time.Duration // SESSION_TTL
	// PasswordHashes is how many gallery passwords tried by viewers one
	// server checks at once (argon2id, 64 MiB each); a try finding them all
	// busy waits briefly in line, galleries taking turns, or is refused
	// with 429. Default: sized from the cores and memory (see
	// abuse/password).
	PasswordHashes int // PASSWORD_HASHES
	// PasswordOwnerHashes is how many gallery passwords set by owners one
	// server hashes at once, on slots of their own, so that owners never
	// take the viewers': one of each user at a time, users taking turns.
	PasswordOwnerHashes int // PASSWORD_OWNER_HASHES

	UploadSecret   string        // UPLOAD_SECRET or the file UPLOAD_SECRET_FILE, HMAC key of signed URLs; generated under DATA_DIR when empty
	UploadURLTTL   time.Duration // UPLOAD_URL_TTL
	MaxUploadBytes int64         // MAX_UPLOAD_BYTES, the largest original accepted
	SweepInterval  time.Duration // SWEEP_INTERVAL
	// SweepReconcileAfter is how long a queued or running job's row must
	// have been quiet before the sweep checks that Asynq still holds its
	// task, and hands it over again if not (after a Redis failover, say).
	SweepReconcileAfter time.Duration // SWEEP_RECONCILE_AFTER

	RateAPIPerMinute     int // RATE_API_PER_MINUTE
	RateAPIBurst         int // RATE_API_BURST
	RateUploadsPerMinute int // RATE_UPLOADS_PER_MINUTE, files prepared for upload
	RateUploadsBurst     int // RATE_UPLOADS_BURST
	// Budgets per client address, for what comes before a key is known.
	RateSignInPerMinute       int // RATE_SIGNIN_PER_MINUTE, POST /v1/session and /v1/auth/*
	RateSignInBurst           int // RATE_SIGNIN_BURST
	RateAuthFailuresPerMinute int // RATE_AUTH_FAILURES_PER_MINUTE, unknown or revoked API keys presented
	RateAuthFailuresBurst     int // RATE_AUTH_FAILURES_BURST
	RateReadyzPerMinute       int // RATE_READYZ_PER_MINUTE, GET /readyz
	RateReadyzBurst           int // RATE_READYZ_BURST

	// Default quotas of every user; a user's own (users.quota_*) wins. 0 is no limit.
	QuotaBytes         int64 // QUOTA_BYTES, originals kept plus uploads in flight
	QuotaFilesInFlight int   // QUOTA_FILES_IN_FLIGHT, uploads prepared but neither finalized nor expired
	QuotaExports       int   // QUOTA_EXPORTS, exports queued, running or kept

	ChainKeyFile     string   // CHAIN_KEY_FILE, the Ed25519 signing key of the attestation chain
	ChainRetiredKeys []string // CHAIN_RETIRED_KEYS, public keys (hex) that signed the chain before its key was rotated
	ChainLedgerURL   string   // CHAIN_LEDGER_URL, an HTTP ledger; empty keeps a local append-only file under DATA_DIR
	ChainBatchSize   int      // CHAIN_BATCH_SIZE, attestations signed per flush
	ChainParallel    int      // CHAIN_CONCURRENCY, publishes to the ledger in flight at once

	ImagingEngine string // IMAGING_ENGINE: vips or go; empty picks vips when built with cgo
	MaxPixels     int64  // MAX_PIXELS, refused before decoding

	SMTPURL         string         // SMTP_URL, smtp://[user:password@]host:port for sign-in codes; empty writes them to the log
	MailFrom        string         // MAIL_FROM, the From of sign-in mail
	EmbedURL        string         // EMBED_URL, an HTTP embedding provider; empty uses the built-in descriptor
	EmbedModel      string         // EMBED_MODEL, the provider's model name
	EmbedDim        int            // EMBED_DIM, the length of the provider's vectors
	EmbedText       bool           // EMBED_TEXT, the provider embeds text too, so search ranks by meaning
	EmbedRatePerMin int            // EMBED_RATE_PER_MINUTE, shared by all workers
	FacesURL        string         // FACES_URL, the face provider's POST endpoint, e.g. the bundled sidecar's http://127.0.0.1:57080/v1/faces; empty for none
	FacesSecret     string         // FACES_SECRET or the file FACES_SECRET_FILE, sent to the face provider as a Bearer token: the bundled sidecar's ML_SECRET
	FacesTimeout    time.Duration  // FACES_TIMEOUT, the longest one face detection may take
	FacesRatePerMin int            // FACES_RATE_PER_MINUTE, shared by all workers
	ClusterDelay    time.Duration  // CLUSTER_DELAY, the debounce before a project is clustered
	DownloadAllow   []netip.Prefix // DOWNLOAD_ALLOW_NETS, private networks URL imports may reach, e.g. 127.0.0.1/32
	DownloadPerHost int            // DOWNLOAD_RATE_PER_HOST, fetches per minute per host, shared by all workers

	MetricsToken   string   // METRICS_TOKEN, a Bearer token that may read /metrics besides admins
	MetricsAddr    string   // METRICS_ADDR, where the worker serves its /metrics; empty for nowhere
	CORSOrigins    []string // CORS_ORIGINS, origins whose pages may call the API and the signed URLs
	TrustedProxies []string // TRUSTED_PROXIES, addresses or networks whose X-Forwarded-For is believed
	Storage                 // BLOB_BACKEND, S3_*, CHAIN_KEY: see storage.go
	Backups        Backups  // BACKUP_*: see backup.go
}

// Load reads the configuration from the process environment.
func Load() (*Config, error) { return FromLookup(os.LookupEnv) }

// FromLookup reads the configuration through lookup, so tests can pass their
// own environment. The error joins every problem found, one per line.
func FromLookup(lookup func(string) (string, bool)) (*Config, error) {
	r := reader{lookup: lookup}
	c := &Config{
		DatabaseURL: r.str("DATABASE_URL", "postgres://lightbox@127.0.0.1:55432/lightbox?sslmode=disable"),
		RedisURL:    r.str("REDIS_URL", "redis://127.0.0.1:56379/0"),
		HTTPAddr:    r.str("HTTP_ADDR", "127.0.0.1:8080"),
		DataDir:     r.str("DATA_DIR", ".data"),
		LogFormat:   r.oneOf("LOG_FORMAT", "json", "json", "text"),
		LogLevel:    r.level("LOG_LEVEL", slog.LevelInfo),

		WorkerConcurrency: r.integer("WORKER_CONCURRENCY", 2*runtime.NumCPU(), 1, 1024),
		QueueWeights:      r.weights("QUEUE_WEIGHTS"),
		ThumbnailsFirst:   r.boolean("THUMBNAILS_FIRST", true),
		StrictPriority:    r.boolean("QUEUE_STRICT_PRIORITY", false),
		ShutdownTimeout:   r.duration("SHUTDOWN_TIMEOUT", 25*time.Second),
		BatchWindow:       r.integer("BATCH_WINDOW", 64, 0, 1<<20),
		UserWindow:        r.integer("USER_WINDOW", 128, 0, 1<<20),
		ExportUserRunning: r.integer("EXPORT_USER_RUNNING", 1, 0, 1024),

		MaxBodyBytes:      r.bytes("MAX_BODY_BYTES", 4<<20),
		BodyReadTimeout:   r.duration("BODY_READ_TIMEOUT", time.Minute),
		SSEHeartbeat:      r.duration("SSE_HEARTBEAT", 15*time.Second),
		SSEStreamsPerUser: r.integer("SSE_STREAMS_PER_USER", 16, 1, 1<<20),
		SessionTTL:        r.duration("SESSION_TTL", 7*24*time.Hour),

		PasswordHashes:      r.integer("PASSWORD_HASHES", password.DefaultSlots(), 1, 256),
		PasswordOwnerHashes: r.integer("PASSWORD_OWNER_HASHES", 1, 1, 256),

		UploadSecret:        r.secret("UPLOAD_SECRET"),
		UploadURLTTL:        r.duration("UPLOAD_URL_TTL", 5*time.Minute),
		MaxUploadBytes:      r.bytes("MAX_UPLOAD_BYTES", 200<<20),
		SweepInterval:       r.duration("SWEEP_INTERVAL", time.Minute),
		SweepReconcileAfter: r.duration("SWEEP_RECONCILE_AFTER", 2*time.Minute),

		RateAPIPerMinute:     r.integer("RATE_API_PER_MINUTE", 1200, 1, 1<<30),
		RateAPIBurst:         r.integer("RATE_API_BURST", 300, 1, 1<<30),
		RateUploadsPerMinute: r.integer("RATE_UPLOADS_PER_MINUTE", 6000, 1, 1<<30),
		RateUploadsBurst:     r.integer("RATE_UPLOADS_BURST", 5000, 1, 1<<30),

		RateSignInPerMinute:       r.integer("RATE_SIGNIN_PER_MINUTE", 3, 1, 1<<30),
		RateSignInBurst:           r.integer("RATE_SIGNIN_BURST", 30, 1, 1<<30),
		RateAuthFailuresPerMinute: r.integer("RATE_AUTH_FAILURES_PER_MINUTE", 10, 1, 1<<30),
		RateAuthFailuresBurst:     r.integer("RATE_AUTH_FAILURES_BURST", 20, 1, 1<<30),
		RateReadyzPerMinute:       r.integer("RATE_READYZ_PER_MINUTE", 300, 1, 1<<30),
		RateReadyzBurst:           r.integer("RATE_READYZ_BURST", 60, 1, 1<<30),

		QuotaBytes:         r.size("QUOTA_BYTES", 1<<40, 0),
		QuotaFilesInFlight: r.integer("QUOTA_FILES_IN_FLIGHT", 10_000, 0, 1<<30),
		QuotaExports:       r.integer("QUOTA_EXPORTS", 20, 0, 1<<20),
	}
	c.ImagingEngine = r.oneOf("IMAGING_ENGINE", "", "", "vips", "go")
	c.MaxPixels = int64(r.integer("MAX_PIXELS", 100_000_000, 1, 1<<40))
	c.SMTPURL = r.str("SMTP_URL", "")
	if c.SMTPURL != "" {
		r.check("SMTP_URL", c.SMTPURL, func(v string) error { return checkURL(v, "smtp") })
	}
	c.MailFrom = r.str("MAIL_FROM", "Lightbox <lightbox@localhost>")
	r.check("MAIL_FROM", c.MailFrom, func(v string) error {
		if _, err := mail.ParseAddress(v); err != nil {
			return fmt.Errorf("%q is not a mail address such as Lightbox <lightbox@example.org>", v)
		}
		return nil
	})
	c.EmbedURL = r.str("EMBED_URL", "")
	c.EmbedModel = r.str("EMBED_MODEL", "")
	c.EmbedDim = r.integer("EMBED_DIM", 0, 0, 1<<16)
	c.EmbedText = r.boolean("EMBED_TEXT", false)
	c.EmbedRatePerMin = r.integer("EMBED_RATE_PER_MINUTE", 600, 1, 1<<30)
	c.FacesURL = r.str("FACES_URL", "")
	c.FacesSecret = r.secret("FACES_SECRET")
	c.FacesTimeout = r.duration("FACES_TIMEOUT", 2*time.Minute)
	c.FacesRatePerMin = r.integer("FACES_RATE_PER_MINUTE", 600, 1, 1<<30)
	c.ClusterDelay = r.duration("CLUSTER_DELAY", 30*time.Second)
	if nets := r.str("DOWNLOAD_ALLOW_NETS", ""); nets != "" {
		for _, n := range strings.Split(nets, ",") {
			p, err := netip.ParsePrefix(strings.TrimSpace(n))
			if err != nil {
				r.fail("DOWNLOAD_ALLOW_NETS", "%q is not a network such as 10.0.0.0/8 or 127.0.0.1/32", n)
				continue
			}
			c.DownloadAllow = append(c.DownloadAllow, p)
		}
	}
	c.WorkerQueues = r.list("WORKER_QUEUES")
	for _, q := range c.WorkerQueues {
		if _, ok := c.QueueWeights[q]; !ok {
			r.fail("WORKER_QUEUES", "%q is not a queue of QUEUE_WEIGHTS", q)
		}
	}
	c.DownloadPerHost = r.integer("DOWNLOAD_RATE_PER_HOST", 120, 1, 1<<30)
	if c.EmbedURL != "" {
		r.check("EMBED_URL", c.EmbedURL, func(v string) error { return checkURL(v, "http", "https") })
		if c.EmbedModel == "" {
			r.fail("EMBED_MODEL", "is required with EMBED_URL")
		}
		if c.EmbedDim == 0 {
			r.fail("EMBED_DIM", "is required with EMBED_URL")
		}
	} else if c.EmbedText {
		r.fail("EMBED_TEXT", "needs EMBED_URL: the built-in descriptor has no text side")
	}
	if c.FacesURL != "" {
		r.check("FACES_URL", c.FacesURL, func(v string) error { return checkURL(v, "http", "https") })
	}
	if c.FacesSecret != "" && (len(c.FacesSecret) < 32 || strings.ContainsFunc(c.FacesSecret, func(r rune) bool { return r <= ' ' || r > '~' })) {
		r.fail("FACES_SECRET", "must be 32 or more printable ASCII characters without spaces, as the sidecar's ML_SECRET")
	}
	c.PublicURL = strings.TrimSuffix(r.str("PUBLIC_URL", "http://"+c.HTTPAddr), "/")
	c.ChainKeyFile = r.str("CHAIN_KEY_FILE", filepath.Join(c.DataDir, "chain-ed25519.key"))
	r.storage(c)
	for _, k := range r.list("CHAIN_RETIRED_KEYS") {
		if b, err := hex.DecodeString(k); err != nil || len(b) != 32 {
			r.fail("CHAIN_RETIRED_KEYS", "%q is not an Ed25519 public key in hex (64 digits, as GET /v1/chain/publicKey shows it)", k)
			continue
		}
		c.ChainRetiredKeys = append(c.ChainRetiredKeys, strings.ToLower(k))
	}
	c.ChainLedgerURL = r.str("CHAIN_LEDGER_URL", "")
	c.ChainBatchSize = r.integer("CHAIN_BATCH_SIZE", 512, 1, 100_000)
	c.ChainParallel = r.integer("CHAIN_CONCURRENCY", 256, 1, 10_000)
	if c.ChainLedgerURL != "" {
		r.check("CHAIN_LEDGER_URL", c.ChainLedgerURL, func(v string) error { return checkURL(v, "http", "https") })
	}

	r.check("DATABASE_URL", c.DatabaseURL, func(v string) error { return checkURL(v, "postgres", "postgresql") })
	r.check("REDIS_URL", c.RedisURL, func(v string) error {
		_, err := redisconn.Parse(v)
		return err
	})
	r.check("PUBLIC_URL", c.PublicURL, func(v string) error { return checkURL(v, "http", "https") })
	r.check("HTTP_ADDR", c.HTTPAddr, func(v string) error {
		_, _, err := net.SplitHostPort(v)
		return err
	})
	if c.UploadSecret != "" && len(c.UploadSecret) < 32 {
		r.fail("UPLOAD_SECRET", "must be at least 32 characters")
	}
	if c.UploadURLTTL < 10*time.Second || c.UploadURLTTL > 24*time.Hour {
		r.fail("UPLOAD_URL_TTL", "must be between 10s and 24h")
	}
	if c.BodyReadTimeout < time.Second || c.BodyReadTimeout > time.Hour {
		r.fail("BODY_READ_TIMEOUT", "must be between 1s and 1h")
	}
	readOperations(&r, c)
	r.backups(c)
	if err := errors.Join(r.errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// readOperations reads the settings of metrics and of the HTTP edge: CORS
// and the proxies in front of the server.
func readOperations(r *reader, c *Config) {
	c.MetricsToken = r.str("METRICS_TOKEN", "")
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		r.fail("METRICS_TOKEN", "must be at least 16 characters")
	}
	c.MetricsAddr = r.str("METRICS_ADDR", "")
	if c.MetricsAddr != "" {
		host, _, err := net.SplitHostPort(c.MetricsAddr)
		ip, _ := netip.ParseAddr(host)
		switch {
		case err != nil:
			r.fail("METRICS_ADDR", "%q is not host:port", c.MetricsAddr)
		case c.MetricsToken == "" && host != "localhost" && !ip.IsLoopback():
			// Anyone who reaches the port could read it.
			r.fail("METRICS_ADDR", "%q is beyond loopback; set METRICS_TOKEN too", c.MetricsAddr)
		}
	}
	for _, o := range r.list("CORS_ORIGINS") {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			r.fail("CORS_ORIGINS", "%q is not an origin such as https://app.example.com", o)
			continue
		}
		c.CORSOrigins = append(c.CORSOrigins, u.Scheme+"://"+strings.ToLower(u.Host))
	}
	for _, p := range r.list("TRUSTED_PROXIES") {
		// Parsed as Gin parses them.
		if _, _, err := net.ParseCIDR(p); err != nil && net.ParseIP(p) == nil {
			r.fail("TRUSTED_PROXIES", "%q is not an address or a network such as 10.0.0.0/8", p)
			continue
		}
		c.TrustedProxies = append(c.TrustedProxies, p)
	}
}

// LedgerPath is the chain's file ledger; empty when the ledger is an HTTP
// log (CHAIN_LEDGER_URL).
func (c *Config) LedgerPath() string {
	if c.ChainLedgerURL != "" {
		return ""
	}
	return filepath.Join(c.DataDir, "chain-ledger.jsonl")
}

// SecureCookies reports whether cookies must be marked Secure: whenever
// clients reach us over HTTPS.
func (c *Config) SecureCookies() bool { return strings.HasPrefix(c.PublicURL, "https://") }

// Logger builds the process logger the configuration asks for.
func (c *Config) Logger() *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, opts))
}

// reader collects every problem instead of stopping at the first, so one
// start-up tells an operator everything to fix.
type reader struct {
	lookup func(string) (string, bool)
	errs   []error
}

func (r *reader) fail(name, format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

func (r *reader) str(name, def string) string {
	if v, ok := r.lookup(name); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return def
}

// secret reads name, or else the file that name_FILE names (a container's
// secret), without the whitespace around it.
func (r *reader) secret(name string) string {
	v := r.str(name, "")
	path := r.str(name+"_FILE", "")
	switch {
	case path == "":
	case v != "":
		r.fail(name+"_FILE", "give %s or %s_FILE, not both", name, name)
	default:
		b, err := os.ReadFile(path)
		if err != nil {
			r.fail(name+"_FILE", "%v", err)
		}
		v = strings.TrimSpace(string(b))
	}
	return v
}

// list reads a comma-separated list, without empty items.
func (r *reader) list(name string) []string {
	var out []string
	for _, v := range strings.Split(r.str(name, ""), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func (r *reader) check(name, v string, f func(string) error) {
	if err := f(v); err != nil {
		r.fail(name, "%v", err)
	}
}

func (r *reader) oneOf(name, def string, allowed ...string) string {
	v := strings.ToLower(r.str(name, def))
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	r.fail(name, "%q is not one of %s", v, strings.Join(allowed, ", "))
	return def
}

func (r *reader) integer(name string, def, lo, hi int) int {
	s := r.str(name, "")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		r.fail(name, "%q is not a whole number", s)
		return def
	}
	if n < lo || n > hi {
		r.fail(name, "%d is outside %d to %d", n, lo, hi)
		return def
	}
	return n
}

func (r *reader) boolean(name string, def bool) bool {
	s := r.str(name, "")
	if s == "" {
		return def
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		r.fail(name, "%q is not true or false", s)
		return def
	}
	return b
}

func (r *reader) duration(name string, def time.Duration) time.Duration {
	s := r.str(name, "")
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		r.fail(name, "%q is not a positive duration such as 30s or 5m", s)
		return def
	}
	return d
}

// bytes reads a positive size in bytes; see size.
func (r *reader) bytes(name string, def int64) int64 { return r.size(name, def, 1) }

// size reads a size in bytes of at least lo; see ParseSize.
func (r *reader) size(name string, def, lo int64) int64 {
	s := r.str(name, "")
	if s == "" {
		return def
	}
	n, err := ParseSize(s)
	if err != nil || n < lo {
		r.fail(name, "%q is not a size of at least %d such as 4194304 or 4MiB", s, lo)
		return def
	}
	return n
}

// ParseSize reads a size in bytes, with an optional KiB, MiB, GiB or TiB
// suffix.
func ParseSize(in string) (int64, error) {
	s, mult := in, int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40} {
		if v, ok := strings.CutSuffix(s, suffix); ok {
			s, mult = strings.TrimSpace(v), m
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a size such as 4194304 or 4MiB", in)
	}
	return n * mult, nil
}

func (r *reader) level(name string, def slog.Level) slog.Level {
	s := r.str(name, "")
	if s == "" {
		return def
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		r.fail(name, "%q is not one of debug, info, warn, error", s)
		return def
	}
	return l
}

// weights parses "critical=18,default=9,low=3", or gives
// tasks.DefaultWeights when unset. Critical, default and low must all be
// present, or their work would never run; thumbnails and faces are added
// when left out.
func (r *reader) weights(name string) map[string]int {
	s := r.str(name, "")
	if s == "" {
		return maps.Clone(tasks.DefaultWeights)
	}
	out := map[string]int{}
	for _, part := range strings.Split(s, ",") {
		q, w, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if !ok || q == "" || err != nil || n < 1 {
			r.fail(name, "%q is not queue=weight with a weight of at least 1", part)
			continue
		}
		out[strings.TrimSpace(q)] = n
	}
	var missing []string
	for _, q := range []string{"critical", "default", "low"} {
		if _, ok := out[q]; !ok {
			missing = append(missing, q)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		r.fail(name, "missing queue(s) %s", strings.Join(missing, ", "))
	}
	// Weights written before thumbnails and face scans had queues of their
	// own still work: a queue left out gets its default weight scaled as
	// the given default queue's is, so "critical=6,default=3,low=1" still
	// weighs thumbnails 200, and faces 1, the least there is.
	scale := cmp.Or(out[tasks.QueueDefault], tasks.DefaultWeights[tasks.QueueDefault])
	for _, q := range []string{tasks.QueueThumbnails, tasks.QueueFaces} {
		if _, ok := out[q]; !ok {
			out[q] = max(1, tasks.DefaultWeights[q]*scale/tasks.DefaultWeights[tasks.QueueDefault])
		}
	}
	return out
}

func checkURL(v string, schemes ...string) error {
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("%q is not a URL", v)
	}
	for _, s := range schemes {
		if u.Scheme == s {
			if u.Host == "" {
				return fmt.Errorf("%q has no host", v)
			}
			return nil
		}
	}
	return fmt.Errorf("%q must start with %s://", v, strings.Join(schemes, ":// or "))
}
