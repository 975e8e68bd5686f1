package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lib/pq"
)

// Age sets column of the rows of table that where selects (every row when
// where is empty) to d before now, as if written, claimed or expired that
// long ago. The service reads Postgres's clock (now()), so time passes for
// a test only this way. Rows that where misses fail the test: an ageing
// that ages nothing would let the test pass for the wrong reason.
func (e *Env) Age(t testing.TB, table, column string, d time.Duration, where string, args ...any) {
	t.Helper()
	q := fmt.Sprintf(`UPDATE %s SET %s = now() - make_interval(secs => $%d)`,
		pq.QuoteIdentifier(table), pq.QuoteIdentifier(column), len(args)+1)
	if where != "" {
		q += " WHERE " + where
	}
	res, err := e.DB.ExecContext(context.Background(), q, append(args, d.Seconds())...)
	if err != nil {
		t.Fatalf("age %s.%s: %v", table, column, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatalf("age %s.%s: no row where %s %v", table, column, where, args)
	}
}
