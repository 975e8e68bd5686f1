package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
)

// JobRow is what SetJobs writes over job rows: each field that is not
// zero. It puts a job in a state the engine would have taken time, a
// crash or another worker to reach.
type JobRow struct {
	Status  store.JobStatus
	Attempt int
	Queue   string
}

// SetJobs writes row over the jobs where selects (every job when where is
// empty); a where that selects none fails the test.
func (e *Env) SetJobs(t testing.TB, row JobRow, where string, args ...any) {
	t.Helper()
	var set sets
	set.add("status", row.Status, row.Status != "")
	set.add("attempt", row.Attempt, row.Attempt != 0)
	set.add("queue", row.Queue, row.Queue != "")
	e.update(t, "jobs", set, where, args)
}

// AssetRow is what SetAssets writes over asset rows: each field that is
// set.
type AssetRow struct {
	Filename string
	Status   string
	// DuplicateOf, when not uuid.Nil, makes the asset a duplicate of it.
	DuplicateOf uuid.UUID
	// NoCaptureTime clears the capture time, as for a photo without EXIF.
	NoCaptureTime bool
}

// SetAssets writes row over the assets where selects (every asset when
// where is empty); a where that selects none fails the test.
func (e *Env) SetAssets(t testing.TB, row AssetRow, where string, args ...any) {
	t.Helper()
	var set sets
	set.add("filename", row.Filename, row.Filename != "")
	set.add("status", row.Status, row.Status != "")
	set.add("duplicate_of", row.DuplicateOf, row.DuplicateOf != uuid.Nil)
	set.add("captured_at", nil, row.NoCaptureTime)
	e.update(t, "assets", set, where, args)
}

// Comments adds n comments on asset to gallery, numbered from 1, as many
// clients would have written over weeks.
func (e *Env) Comments(t testing.TB, gallery, asset uuid.UUID, n int) {
	t.Helper()
	e.exec(t, `INSERT INTO gallery_comments (id, gallery_id, asset_id, body)
		SELECT gen_random_uuid(), $1, $2, 'comment ' || n FROM generate_series(1, $3) n`, gallery, asset, n)
}

// Viewers adds n viewers of gallery whose sign-in lasts until expire from
// now, as many clients who typed its password would be.
func (e *Env) Viewers(t testing.TB, gallery uuid.UUID, n int, expire time.Duration) {
	t.Helper()
	e.exec(t, `INSERT INTO gallery_viewers (id, gallery_id, token_hash, auth_version, expires_at)
		SELECT gen_random_uuid(), $1, decode(md5(gen_random_uuid()::text), 'hex'), 0, now() + make_interval(secs => $3)
		FROM generate_series(1, $2) n`, gallery, n, expire.Seconds())
}

// sets is the SET list of an UPDATE and its arguments.
type sets struct {
	cols []string
	args []any
}

func (s *sets) add(col string, v any, ok bool) {
	if ok {
		s.cols = append(s.cols, col)
		s.args = append(s.args, v)
	}
}

func (e *Env) update(t testing.TB, table string, set sets, where string, args []any) {
	t.Helper()
	if len(set.cols) == 0 {
		t.Fatalf("set %s: nothing to set", table)
	}
	assign := make([]string, len(set.cols))
	for i, c := range set.cols {
		assign[i] = fmt.Sprintf("%s = $%d", c, len(args)+i+1)
	}
	q := "UPDATE " + table + " SET " + strings.Join(assign, ", ")
	if where != "" {
		q += " WHERE " + where
	}
	res, err := e.DB.ExecContext(context.Background(), q, append(args, set.args...)...)
	if err != nil {
		t.Fatalf("set %s: %v", table, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatalf("set %s: no row where %s %v", table, where, args)
	}
}

func (e *Env) exec(t testing.TB, q string, args ...any) {
	t.Helper()
	if _, err := e.DB.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatal(err)
	}
}

// Count runs a query that selects one number, such as count(*), and
// returns it.
func (e *Env) Count(t testing.TB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := e.DB.GetContext(context.Background(), &n, q, args...); err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}
