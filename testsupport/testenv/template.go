package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"lightbox/store"
)

// Applying every migration took a test 150 to 400 ms of a busy machine;
// cloning a database that already holds them takes 40 to 60. So the
// migrations are applied once per state of store/migrations, into a
// template database shared by every test process (and by later runs), and
// each test gets a clone of it (CREATE DATABASE … TEMPLATE).

// templateSchema is the schema that holds the tables in the template and so
// in every test's database.
const templateSchema = "lightbox"

// templatePrefix starts the name of every template database; the rest is
// the hash of the migrations it holds.
const templatePrefix = "lightbox_template_"

// templateMaxAge is how long a template is kept before the next one built
// drops it; a later run that wants it builds it again.
const templateMaxAge = 24 * time.Hour

// templateLockClass is the first key of the advisory lock that lets one
// process build a template while the others wait for it.
const templateLockClass = 0x7e57

var templates sync.Map // DATABASE_URL → *template

type template struct {
	once sync.Once
	name string
	err  error
}

// migrated returns the name of the template the tests' databases are
// cloned from, built the first time any process asks for these
// migrations on base's server.
func migrated(ctx context.Context, base string) (string, error) {
	v, _ := templates.LoadOrStore(base, &template{})
	tp := v.(*template)
	tp.once.Do(func() {
		admin, err := sqlx.Open("postgres", base)
		if err != nil {
			tp.err = err
			return
		}
		defer admin.Close()
		tp.name, tp.err = buildTemplate(ctx, admin, base)
	})
	return tp.name, tp.err
}

// templateName is the template's name for the migrations of this build.
func templateName() (string, error) {
	all, err := store.Migrations()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range all {
		fmt.Fprintf(h, "%d %s %d\n%s", m.Version, m.Name, len(m.SQL), m.SQL)
	}
	return templatePrefix + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// buildTemplate makes sure the template for these migrations exists, and
// builds it under an advisory lock when it does not.
func buildTemplate(ctx context.Context, admin *sqlx.DB, base string) (string, error) {
	name, err := templateName()
	if err != nil {
		return "", err
	}
	conn, err := admin.Connx(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	// The lock is the session's, so it is released on this connection.
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, templateLockClass, name); err != nil {
		return "", fmt.Errorf("lock the template %s: %w", name, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext($2))`, templateLockClass, name)

	var exists bool
	if err := conn.GetContext(ctx, &exists, `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, name); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	// The template is built under another name and renamed when whole, so
	// a build cut short is never cloned; the next build drops its remains.
	build := name + "_build"
	if _, err := conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+build+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+build); err != nil {
		return "", fmt.Errorf("create the template %s: %w", name, err)
	}
	if err := migrateTemplate(ctx, base, build); err != nil {
		conn.ExecContext(ctx, "DROP DATABASE "+build+" WITH (FORCE)")
		return "", err
	}
	// No connection may be made to a template: one would stop every clone
	// ("source database is being accessed by other users"), autovacuum's
	// included. The comment dates it for pruneTemplates.
	for _, q := range []string{
		"ALTER DATABASE " + build + " WITH ALLOW_CONNECTIONS false IS_TEMPLATE true",
		"COMMENT ON DATABASE " + build + " IS '" + time.Now().UTC().Format(time.RFC3339) + "'",
		"ALTER DATABASE " + build + " RENAME TO " + name,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("template %s: %s: %w", name, q, err)
		}
	}
	pruneTemplates(ctx, conn, name)
	return name, nil
}

// migrateTemplate applies every migration to database name.
func migrateTemplate(ctx context.Context, base, name string) error {
	dsn, err := withDatabase(base, name, templateSchema)
	if err != nil {
		return err
	}
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "CREATE SCHEMA "+templateSchema)
	db.Close()
	if err != nil {
		return err
	}
	s, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.Migrate(ctx, nil); err != nil {
		return fmt.Errorf("migrate the template %s: %w", name, err)
	}
	return nil
}

// pruneTemplates drops the templates built more than templateMaxAge ago,
// but for keep. One being cloned right now refuses to go, and stays.
func pruneTemplates(ctx context.Context, conn *sqlx.Conn, keep string) {
	var old []struct {
		Name    string `db:"datname"`
		Comment string `db:"comment"`
	}
	conn.SelectContext(ctx, &old, `SELECT datname, coalesce(shobj_description(oid, 'pg_database'), '') AS comment
		FROM pg_database WHERE datistemplate AND starts_with(datname, $1) AND datname <> $2`, templatePrefix, keep)
	for _, d := range old {
		built, err := time.Parse(time.RFC3339, d.Comment)
		if err != nil || time.Since(built) < templateMaxAge || strings.ContainsAny(d.Name, `"' ;`) {
			continue
		}
		if _, err := conn.ExecContext(ctx, "ALTER DATABASE "+d.Name+" IS_TEMPLATE false"); err == nil {
			conn.ExecContext(ctx, "DROP DATABASE "+d.Name)
		}
	}
}

// withDatabase returns dsn naming database db instead of its own, with
// every connection's search_path set to schema.
func withDatabase(dsn, db, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	u.Path = "/" + db
	return WithSearchPath(u.String(), schema)
}
