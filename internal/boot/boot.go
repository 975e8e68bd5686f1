// Package boot provides the start-up steps the binaries share: reading the
// configuration, connecting to Postgres (migrated) and Redis, and a context
// that ends on SIGINT or SIGTERM.
package boot

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"lightbox/config"
	"lightbox/store"
)

// Process is what every binary starts with: its configuration, logger, a
// migrated store and a context that ends on SIGINT or SIGTERM.
type Process struct {
	Ctx    context.Context
	Config *config.Config
	Log    *slog.Logger
	Store  *store.Store
	stop   context.CancelFunc
}

// Start loads the configuration, connects to Postgres and migrates it.
func Start() (*Process, error) {
	cfg, log, err := Config()
	if err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	st, err := Store(ctx, cfg, log)
	if err != nil {
		stop()
		return nil, err
	}
	return &Process{Ctx: ctx, Config: cfg, Log: log, Store: st, stop: stop}, nil
}

// Close releases what Start opened.
func (p *Process) Close() {
	p.Store.Close()
	p.stop()
}

// Config loads the configuration and the logger it asks for, and makes that
// logger the default.
func Config() (*config.Config, *slog.Logger, error) {
	cfg, err := config.Load()
	if err != nil {
		return nil, nil, fmt.Errorf("configuration:\n%w", err)
	}
	log := cfg.Logger()
	slog.SetDefault(log)
	return cfg, log, nil
}

// Store connects to Postgres and applies pending migrations.
func Store(ctx context.Context, cfg *config.Config, log *slog.Logger) (*store.Store, error) {
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if _, err := store.Migrate(ctx, st.DB, log); err != nil {
		st.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return st, nil
}

// Redis returns a client for REDIS_URL.
func Redis(cfg *config.Config) (*redis.Client, error) {
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	return redis.NewClient(opt), nil
}
