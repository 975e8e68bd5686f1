// Package store provides Lightbox's Postgres access: one file per table
// group, plain SQL through sqlx, and the embedded migrations that shape the
// schema. Every method runs on the pool, or in one transaction on the Store
// that WithTx hands out; callers never see sqlx.
package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq" // the Postgres driver
)

// ErrNotFound is returned when a row does not exist or belongs to another user.
var ErrNotFound = errors.New("not found")

// DuplicateError refuses to bring a failed asset back to life when another
// live asset of its project holds the same bytes (uploaded again after
// the failure): a project keeps one live original per content.
type DuplicateError struct {
	Of uuid.UUID // the live asset with the same bytes
}

func (e *DuplicateError) Error() string { return "the same bytes are live as asset " + e.Of.String() }

// duplicateOf turns err into a DuplicateError when it is the unique index
// on a project's live checksums refusing asset's return.
func (s *Store) duplicateOf(ctx context.Context, asset uuid.UUID, err error) error {
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Code != "23505" || pqErr.Constraint != "assets_project_checksum" {
		return err
	}
	// Read on the pool: inside a transaction the collision aborted it, and
	// the live asset is committed.
	var of uuid.UUID
	if e := s.pool.GetContext(ctx, &of, `
		SELECT b.id FROM assets a JOIN assets b ON b.project_id = a.project_id AND b.checksum_sha256 = a.checksum_sha256
		WHERE a.id = $1 AND b.id <> a.id AND b.status NOT IN ('pending_upload', 'failed', 'duplicate')`, asset); e != nil {
		return err
	}
	return &DuplicateError{Of: of}
}

// Store is the Postgres-backed data layer. A Store made by WithTx runs
// every method inside that transaction; the one Open returns uses the pool.
type Store struct {
	db    querier
	pool  *sqlx.DB
	tx    bool // db is a transaction
	stmts *statements
	// handOver receives the queued jobs each transaction recorded, once
	// it has committed (see WithHandOver); nil leaves them to the sweep.
	handOver func(ctx context.Context, jobs []Job)
	// recorded are the queued jobs this transaction recorded.
	recorded *[]Job
}

// statements are the pool's prepared statements, for queries hot enough
// that the round trip a prepare costs matters; each is prepared on first
// use, and again after a failed prepare.
type statements struct {
	mu        sync.Mutex
	jobStatus *sqlx.Stmt
	jobStates *sqlx.Stmt
}

// prepared is the statement *p holds, preparing query into it first if
// it is still nil.
func (s *Store) prepared(ctx context.Context, p **sqlx.Stmt, query string) (*sqlx.Stmt, error) {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	if *p == nil {
		stmt, err := s.pool.PreparexContext(ctx, query)
		if err != nil {
			return nil, err
		}
		*p = stmt
	}
	return *p, nil
}

// preparedTx is prepared as prepared does, bound to s's transaction when s
// has one: database/sql keeps a statement prepared on every connection it
// ran on, so a transaction on one of those uses it as it is.
func (s *Store) preparedTx(ctx context.Context, p **sqlx.Stmt, query string) (*sqlx.Stmt, error) {
	stmt, err := s.prepared(ctx, p, query)
	if err != nil || !s.tx {
		return stmt, err
	}
	return s.db.(*sqlx.Tx).StmtxContext(ctx, stmt), nil
}

// querier is what the pool and a transaction both offer, so every method
// runs on either.
type querier interface {
	sqlx.ExtContext
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
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
	return &Store{db: db, pool: db, stmts: &statements{}}, nil
}

// Close closes the connection pool.
func (s *Store) Close() error { return s.pool.Close() }

// Ping reports whether Postgres answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.PingContext(ctx) }

// pingLimit bounds Down's ping.
const pingLimit = 3 * time.Second

// Down reports whether Postgres fails to answer a ping now, within
// pingLimit, whether or not ctx has ended: a caller asks it to tell an
// outage from its own failure.
func (s *Store) Down(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pingLimit)
	defer cancel()
	return s.Ping(ctx) != nil
}

// WithHandOver returns a Store like s (the same pool) whose transactions,
// once committed, give the queued jobs they recorded (InsertJobs) to
// handOver, with the ctx WithTx was given. A job recorded in a
// transaction that rolls back is never handed over.
func (s *Store) WithHandOver(handOver func(ctx context.Context, jobs []Job)) *Store {
	c := *s
	c.handOver = handOver
	return &c
}

// WithTx runs fn with a Store whose methods all run in one transaction,
// committed when fn returns nil and rolled back otherwise. Inside a
// transaction already, fn joins it: the outermost WithTx decides, and
// hands over the jobs recorded once it has committed.
func (s *Store) WithTx(ctx context.Context, fn func(tx *Store) error) error {
	if s.tx {
		return fn(s)
	}
	tx, err := s.pool.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	in := &Store{db: tx, pool: s.pool, tx: true, stmts: s.stmts, handOver: s.handOver, recorded: new([]Job)}
	if err := fn(in); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if s.handOver != nil && len(*in.recorded) > 0 {
		s.handOver(ctx, *in.recorded)
	}
	return nil
}

// collisionTries is how often retryCollisions runs its work.
const collisionTries = 3

// retryCollisions runs fn in a transaction (s's own, or a new one) and
// runs it again when it collides with a concurrent transaction on a
// unique index: the other has committed by then, and fn sees its rows the
// next time. Inside a caller's transaction each try runs under a
// savepoint, so a collision undoes only fn's part.
func (s *Store) retryCollisions(ctx context.Context, fn func(tx *Store) error) error {
	if !s.tx {
		return s.WithTx(ctx, func(tx *Store) error { return tx.retryCollisions(ctx, fn) })
	}
	var err error
	for range collisionTries {
		if _, err = s.db.ExecContext(ctx, `SAVEPOINT collision`); err != nil {
			return err
		}
		if err = fn(s); err == nil {
			_, err = s.db.ExecContext(ctx, `RELEASE SAVEPOINT collision`)
			return err
		}
		var pqErr *pq.Error
		if !errors.As(err, &pqErr) || pqErr.Code != "23505" {
			return err
		}
		if _, rerr := s.db.ExecContext(ctx, `ROLLBACK TO SAVEPOINT collision`); rerr != nil {
			return rerr
		}
	}
	return err
}

// deadlockTries is how often retryDeadlocks runs its transaction.
const deadlockTries = 3

// retryDeadlocks runs fn in a new transaction, and again in another when
// Postgres ends the first to break a deadlock (40P01): the other side has
// gone on by then. fn must start from scratch each time. Inside a
// caller's transaction it only joins it: that transaction is the one to
// retry.
func (s *Store) retryDeadlocks(ctx context.Context, fn func(tx *Store) error) error {
	var err error
	for range deadlockTries {
		err = s.WithTx(ctx, fn)
		var pqErr *pq.Error
		if s.tx || !errors.As(err, &pqErr) || pqErr.Code != "40P01" {
			return err
		}
	}
	return err
}

// compareIDs orders ids byte by byte, as Postgres orders uuids.
func compareIDs(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
