// Package server provides Lightbox's HTTP API: a Gin router with request
// ids, authentication, rate limits, idempotency and JSON errors, one file per
// resource, and the graceful start and stop of the HTTP server.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"lightbox/abuse/guess"
	"lightbox/abuse/password"
	"lightbox/app"
	"lightbox/blob"
	"lightbox/chain"
	"lightbox/config"
	"lightbox/embedding"
	"lightbox/events"
	"lightbox/jobs"
	"lightbox/server/mail"
	"lightbox/similar"
	"lightbox/store"
)

// Deps are what the server is wired with.
type Deps struct {
	Config *config.Config
	Store  *store.Store
	Redis  *redis.Client
	Queue  *asynq.Client
	// Inspector looks up and reruns tasks in the queue.
	Inspector *asynq.Inspector
	Blobs     blob.Store
	// Signer signs the URLs browsers upload and download through; when it
	// is also a blob.URLVerifier its URLs lead here, to /blobs/.
	Signer blob.URLSigner
	// EmbedModel names the vectors /similar compares.
	EmbedModel string
	// TextEmbedder puts a search's words in EmbedModel's space; nil when
	// the embedder has no text side, and search matches words only.
	TextEmbedder embedding.TextEmbedder
	// ChainKeys verify the attestation chain: the signing key's public
	// half and the retired keys older attestations name.
	ChainKeys chain.Keys
	Logger    *slog.Logger
	// Now is the time the sign-in throttle counts by; time.Now when nil.
	// Tests move it to play hours of guessing in a moment.
	Now func() time.Time
}

// Server is the API.
type Server struct {
	cfg        *config.Config
	store      *store.Store
	rdb        *redis.Client
	queue      *asynq.Client
	inspector  *asynq.Inspector
	blobs      blob.Store
	signer     blob.URLSigner
	verifier   blob.URLVerifier // nil when the URLs lead to another service
	limits     limits
	locks      *redislock.Client // one PUT at a time per upload, one chain verification per user
	jobs       *jobs.Dispatcher
	app        *app.App // the use cases handlers call
	embedModel string
	texts      embedding.TextEmbedder
	vectors    *similar.Index // the vectors /similar ranks, kept in memory
	chainKeys  chain.Keys
	hub        *events.Hub
	events     *events.Publisher
	streams    streamCounts
	log        *slog.Logger
	router     *gin.Engine
	// actionTable lists the actions the router dispatches (actions.go).
	actionTable actionTable
	metrics     *serverMetrics
	mail        mail.Sender    // sign-in codes
	guesses     *guess.Counter // sign-in codes tried
	now         func() time.Time
	// viewerHashes checks the gallery passwords viewers try, a few at a
	// time (PASSWORD_HASHES); ownerHashes hashes those owners set, on
	// slots of their own (PASSWORD_OWNER_HASHES).
	viewerHashes, ownerHashes *password.Pool
	// shareGuesses counts gallery passwords tried, before they are checked.
	shareGuesses *guess.Turns
}

// New builds the server and its routes.
func New(d Deps) *Server {
	s := &Server{
		cfg: d.Config, store: d.Store, rdb: d.Redis, queue: d.Queue, inspector: d.Inspector,
		blobs: d.Blobs, signer: d.Signer, log: d.Logger, embedModel: d.EmbedModel, texts: d.TextEmbedder, chainKeys: d.ChainKeys,
		vectors: &similar.Index{Store: d.Store}, guesses: guess.New(d.Redis), now: d.Now,
		limits: limits{
			rl:      redis_rate.NewLimiter(d.Redis),
			errors:  new(atomic.Int64),
			api:     perMinute(d.Config.RateAPIPerMinute, d.Config.RateAPIBurst),
			uploads: perMinute(d.Config.RateUploadsPerMinute, d.Config.RateUploadsBurst),

			signIn:       perMinute(d.Config.RateSignInPerMinute, d.Config.RateSignInBurst),
			authFailures: perMinute(d.Config.RateAuthFailuresPerMinute, d.Config.RateAuthFailuresBurst),
			readyz:       perMinute(d.Config.RateReadyzPerMinute, d.Config.RateReadyzBurst),
		},
	}
	var err error
	s.verifier, _ = d.Signer.(blob.URLVerifier)
	s.streams.max = d.Config.SSEStreamsPerUser
	s.locks = redislock.New(d.Redis)
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.mail, err = mail.New(d.Config.SMTPURL, d.Config.MailFrom, s.log); err != nil {
		// The configuration checked both; this would be a bug.
		panic(err)
	}
	s.viewerHashes = password.NewPool(viewerHashes(d.Config.PasswordHashes))
	s.ownerHashes = password.NewPool(ownerHashes(d.Config.PasswordOwnerHashes))
	s.shareGuesses = guess.NewTurns(d.Redis, "share-pw", shareGuessLimits)
	s.jobs = jobs.New(jobs.Config{Store: d.Store, Queue: d.Queue, Inspector: d.Inspector, Redis: d.Redis, Log: s.log,
		Caps: store.QueueCaps{Batch: d.Config.BatchWindow, User: d.Config.UserWindow}, ExportsPerUser: d.Config.ExportUserRunning})
	// Jobs recorded in its transactions are handed to the queue once committed.
	s.store = s.jobs.Store
	s.hub = events.NewHub(d.Redis, s.log)
	s.events = events.NewPublisher(d.Redis, events.PublisherOptions{})
	s.app = app.New(app.Config{Jobs: s.jobs, Blobs: d.Blobs, Signer: d.Signer, Quotas: quotaDefaults(d.Config),
		Events: s.events, ThumbnailsFirst: d.Config.ThumbnailsFirst, Log: s.log})
	s.metrics = newServerMetrics(s)
	gin.SetMode(gin.ReleaseMode)
	s.router = s.routes()
	return s
}

// Handler is the whole HTTP surface, for tests and for Run.
func (s *Server) Handler() http.Handler { return s.router }

// Run serves on the configured address until ctx ends, then stops taking
// connections and lets requests in flight finish.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.router,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("http listening", "addr", ln.Addr().String(), "publicUrl", s.cfg.PublicURL)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("http shutting down")
	// Streams end first, so Shutdown does not wait on them and clients
	// reconnect to another server.
	s.hub.Close()
	stop, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(stop); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
