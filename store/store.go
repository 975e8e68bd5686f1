// Package store provides Lightbox's Postgres access: one file per table
// group, plain SQL through sqlx, and the embedded migrations that shape the
// schema.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // the Postgres driver
)

// ErrNotFound is returned when a row does not exist or belongs to another user.
var ErrNotFound = errors.New("not found")

// Store is the Postgres-backed data layer.
type Store struct {
	DB *sqlx.DB
}

// Open connects to dsn and checks that the server answers.
func Open(ctx context.Context, dsn string) (*Store, error) {
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(20)
	db.SetMaxIdleConns(10)
	db.SetConnMaxIdleTime(5 * time.Minute)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	return &Store{DB: db}, nil
}

// Close closes the connection pool.
func (s *Store) Close() error { return s.DB.Close() }

// Ping reports whether Postgres answers.
func (s *Store) Ping(ctx context.Context) error { return s.DB.PingContext(ctx) }

// InTx runs fn in a transaction, committing when it returns nil.
func (s *Store) InTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := s.DB.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
