package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one numbered SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations lists the embedded migrations in the order they apply.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number and an underscore", e.Name())
		}
		body, err := fs.ReadFile(migrationFiles, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share a version", out[i-1].Name, out[i].Name)
		}
	}
	return out, nil
}

// SchemaTooNewError refuses a database that a later Lightbox has migrated
// past the newest migration this binary embeds: this binary's queries
// would meet tables whose shape it does not know, and it cannot undo a
// migration.
type SchemaTooNewError struct {
	Version int    // the newest migration the database has applied
	Name    string // that migration's file name, as schema_migrations records it
	Known   int    // the newest migration this binary embeds
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("database schema is at version %d (%s), but this Lightbox knows migrations only up to %d: "+
		"run a Lightbox built with migration %d or newer", e.Version, e.Name, e.Known, e.Version)
}

// appliedMigrations reads the versions schema_migrations records. It
// refuses, with a *SchemaTooNewError, a newest version past the newest of
// all, the embedded migrations.
func appliedMigrations(ctx context.Context, q sqlx.QueryerContext, all []Migration) (map[int]bool, error) {
	var rows []struct {
		Version int    `db:"version"`
		Name    string `db:"name"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, `SELECT version, name FROM schema_migrations ORDER BY version`); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	applied := make(map[int]bool, len(rows))
	for _, r := range rows {
		applied[r.Version] = true
	}
	known := 0
	if len(all) > 0 {
		known = all[len(all)-1].Version
	}
	if n := len(rows); n > 0 && rows[n-1].Version > known {
		return nil, &SchemaTooNewError{Version: rows[n-1].Version, Name: rows[n-1].Name, Known: known}
	}
	return applied, nil
}

// PendingMigrations returns the newest migration version the database has
// applied (0 for none) and the migrations Migrate would apply, in order,
// changing nothing: a database without schema_migrations has applied
// none. A schema newer than this binary knows is a *SchemaTooNewError, as
// Migrate would refuse it.
func (s *Store) PendingMigrations(ctx context.Context) (version int, pending []Migration, err error) {
	all, err := Migrations()
	if err != nil {
		return 0, nil, err
	}
	var exists bool
	if err := s.pool.GetContext(ctx, &exists, `SELECT to_regclass('schema_migrations') IS NOT NULL`); err != nil {
		return 0, nil, err
	}
	applied := map[int]bool{}
	if exists {
		if applied, err = appliedMigrations(ctx, s.pool, all); err != nil {
			return 0, nil, err
		}
	}
	for v := range applied {
		version = max(version, v)
	}
	for _, m := range all {
		if !applied[m.Version] {
			pending = append(pending, m)
		}
	}
	return version, pending, nil
}

// migrationLockClass keys the advisory lock; the second key is the schema, so
// processes migrating different schemas of one database do not wait on each
// other while two processes migrating the same schema take turns.
const migrationLockClass = 0x4c42 // "LB"

// Migrate applies every migration not yet applied, each in its own
// transaction, under an advisory lock so concurrent starts cannot race.
// It returns the versions it applied. A database a later Lightbox has
// migrated further than this binary knows is refused, before anything is
// applied, with a *SchemaTooNewError.
func (s *Store) Migrate(ctx context.Context, log *slog.Logger) ([]int, error) {
	return s.MigrateTo(ctx, log, math.MaxInt)
}

// MigrateTo is Migrate applying only the migrations up to and including
// version: the schema an earlier release left, which upgrade tests fill
// and then migrate to now.
func (s *Store) MigrateTo(ctx context.Context, log *slog.Logger, version int) ([]int, error) {
	all, err := Migrations()
	if err != nil {
		return nil, err
	}
	conn, err := s.pool.Connx(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()

	// Session-level lock on this one connection; released before it returns to the pool.
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, hashtext(current_schema()))`, migrationLockClass); err != nil {
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, migrationLockClass)

	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version int PRIMARY KEY,
		name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	// Read under the lock, so what another start applied meanwhile counts.
	applied, err := appliedMigrations(ctx, conn, all)
	if err != nil {
		return nil, err
	}

	var done []int
	for _, m := range all {
		if m.Version > version {
			break
		}
		if applied[m.Version] {
			continue
		}
		tx, err := conn.BeginTxx(ctx, nil)
		if err != nil {
			return done, err
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			tx.Rollback()
			return done, fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			tx.Rollback()
			return done, err
		}
		if err := tx.Commit(); err != nil {
			return done, fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if log != nil {
			log.Info("migration applied", "version", m.Version, "name", m.Name)
		}
		done = append(done, m.Version)
	}
	return done, nil
}
