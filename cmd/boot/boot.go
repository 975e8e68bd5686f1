// Package boot provides the start-up steps the binaries share: reading the
// configuration, connecting to Postgres (migrated) and Redis, and a context
// that ends on SIGINT or SIGTERM.
package boot

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"lightbox/blob"
	"lightbox/chain"
	"lightbox/config"
	"lightbox/embedding"
	"lightbox/faces"
	"lightbox/imaging"
	"lightbox/redisconn"
	"lightbox/store"
)

// Process is what every binary starts with: its configuration, logger, a
// migrated store, a Redis client and Asynq's option for the same Redis, the
// blob store with the signer of its URLs, and a context that ends on SIGINT
// or SIGTERM.
type Process struct {
	Ctx    context.Context
	Config *config.Config
	Log    *slog.Logger
	Store  *store.Store
	Redis  *redis.Client
	Queue  asynq.RedisConnOpt
	Blobs  blob.Store
	URLs   blob.URLSigner
	stop   context.CancelFunc
}

// Start loads the configuration, connects to Postgres and migrates it.
func Start() (*Process, error) {
	cfg, log, err := Config()
	if err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	p := &Process{Ctx: ctx, Config: cfg, Log: log, stop: stop}
	if p.Store, err = Store(ctx, cfg, log); err != nil {
		stop()
		return nil, err
	}
	if p.Redis, p.Queue, err = Redis(cfg); err == nil {
		p.Blobs, p.URLs, err = Blobs(cfg)
	}
	if b, ok := p.Blobs.(*blob.S3); ok && err == nil {
		err = b.EnsureBucket(ctx)
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Close releases what Start opened.
func (p *Process) Close() {
	p.Store.Close()
	if p.Redis != nil {
		p.Redis.Close()
	}
	p.stop()
}

// Config loads the configuration and the logger it asks for, and makes that
// logger the default, go-redis's included.
func Config() (*config.Config, *slog.Logger, error) {
	cfg, err := config.Load()
	if err != nil {
		return nil, nil, fmt.Errorf("configuration:\n%w", err)
	}
	log := cfg.Logger()
	slog.SetDefault(log)
	redis.SetLogger(redisLogger{log})
	return cfg, log, nil
}

// redisLogger keeps what go-redis reports (a failed dial, a new primary
// named by the sentinels) in the process log's format instead of plain
// lines on stderr.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.InfoContext(ctx, "redis", "detail", fmt.Sprintf(format, v...))
}

// Store connects to Postgres and applies pending migrations.
func Store(ctx context.Context, cfg *config.Config, log *slog.Logger) (*store.Store, error) {
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if _, err := st.Migrate(ctx, log); err != nil {
		st.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return st, nil
}

// Redis returns a client for REDIS_URL and Asynq's option for the same
// server: one Redis, or the primary its sentinels name.
func Redis(cfg *config.Config) (*redis.Client, asynq.RedisConnOpt, error) {
	c, err := redisconn.Parse(cfg.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	return c.Client(), c.Asynq(), nil
}

// ChainKey is the chain's signing key: CHAIN_KEY, or the file CHAIN_KEY_FILE.
func ChainKey(cfg *config.Config) (ed25519.PrivateKey, error) {
	if cfg.ChainKey != "" {
		key, err := chain.ParseKey([]byte(cfg.ChainKey))
		if err != nil {
			return nil, fmt.Errorf("CHAIN_KEY: %w", err)
		}
		return key, nil
	}
	key, err := chain.LoadKey(cfg.ChainKeyFile)
	if err != nil {
		return nil, fmt.Errorf("CHAIN_KEY_FILE: %w (make one with: lightbox keygen %s)", err, cfg.ChainKeyFile)
	}
	return key, nil
}

// ChainKeys is what the chain is verified under: the signing key's public
// half, and the keys CHAIN_RETIRED_KEYS names.
func ChainKeys(cfg *config.Config) (chain.Keys, error) {
	key, err := ChainKey(cfg)
	if err != nil {
		return chain.Keys{}, err
	}
	keys, err := chain.NewKeys(key.Public().(ed25519.PublicKey), cfg.ChainRetiredKeys...)
	if err != nil {
		return chain.Keys{}, fmt.Errorf("CHAIN_RETIRED_KEYS: %w", err)
	}
	return keys, nil
}

// Blobs opens the blob store BLOB_BACKEND names and the signer of its
// URLs: below DATA_DIR with URLs to the server's /blobs route under
// PUBLIC_URL, or in the S3 bucket with presigned URLs to it.
func Blobs(cfg *config.Config) (blob.Store, blob.URLSigner, error) {
	if cfg.BlobBackend == "s3" {
		return blob.Open(blob.Config{Backend: "s3", S3: S3(cfg.Storage)})
	}
	secret, err := UploadSecret(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("upload secret: %w", err)
	}
	return blob.Open(blob.Config{Dir: filepath.Join(cfg.DataDir, "blobs"), Secret: secret, BaseURL: cfg.PublicURL + "/blobs"})
}

// S3 is the bucket the S3_* settings of s describe.
func S3(s config.Storage) blob.S3Config { return s.S3Config() }

// UploadSecret is the HMAC key of signed URLs: UPLOAD_SECRET, or a random
// one kept in DATA_DIR so every process sharing that folder agrees on it.
func UploadSecret(cfg *config.Config) ([]byte, error) {
	if cfg.UploadSecret != "" {
		return []byte(cfg.UploadSecret), nil
	}
	path := filepath.Join(cfg.DataDir, "upload-secret")
	if b, err := os.ReadFile(path); err == nil && len(b) >= 32 {
		return b, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, err
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	encoded := []byte(hex.EncodeToString(secret))
	// O_EXCL: when two processes start together, one writes and both read it.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, err = f.Write(encoded)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return encoded, err
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	for range 50 {
		if b, err := os.ReadFile(path); err == nil && len(b) >= 32 {
			return b, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("%s exists but holds no secret", path)
}

// Engine is the imaging engine IMAGING_ENGINE names.
func Engine(cfg *config.Config) (imaging.Engine, error) {
	e, err := imaging.New(cfg.ImagingEngine, imaging.Config{MaxPixels: cfg.MaxPixels, MaxBytes: cfg.MaxUploadBytes})
	if err != nil {
		return nil, fmt.Errorf("IMAGING_ENGINE: %w", err)
	}
	return e, nil
}

// Embedder is the HTTP provider at EMBED_URL, or the built-in descriptor.
func Embedder(cfg *config.Config) (embedding.Embedder, error) {
	if cfg.EmbedURL == "" {
		return embedding.Builtin{}, nil
	}
	return embedding.NewHTTP(embedding.HTTPConfig{URL: cfg.EmbedURL, Model: cfg.EmbedModel, Dim: cfg.EmbedDim})
}

// Faces is the face provider at FACES_URL, or nil when there is none: the
// worker's asset:faces tasks then wait for a worker that has one.
func Faces(cfg *config.Config) (faces.Provider, error) {
	if cfg.FacesURL == "" {
		return nil, nil
	}
	return faces.NewHTTP(faces.HTTPConfig{URL: cfg.FacesURL, Secret: cfg.FacesSecret, Timeout: cfg.FacesTimeout})
}

// textTimeout bounds the embedding of a search's words: a search waits for
// it, so a slow provider falls back to plain search instead.
const textTimeout = 5 * time.Second

// TextEmbedder is the provider's text side when EMBED_TEXT says it has
// one, and nil otherwise.
func TextEmbedder(cfg *config.Config) (embedding.TextEmbedder, error) {
	if !cfg.EmbedText {
		return nil, nil
	}
	return embedding.NewHTTP(embedding.HTTPConfig{URL: cfg.EmbedURL, Model: cfg.EmbedModel, Dim: cfg.EmbedDim, Timeout: textTimeout})
}

// Ledger is the HTTP ledger at CHAIN_LEDGER_URL, or the local append-only
// file under DATA_DIR.
func Ledger(cfg *config.Config) (chain.Ledger, error) {
	if cfg.ChainLedgerURL != "" {
		return chain.NewHTTPLedger(cfg.ChainLedgerURL, cfg.ChainParallel)
	}
	return chain.OpenFileLedger(cfg.LedgerPath())
}
