package faults_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"lightbox/chain"
	"lightbox/testsupport/testenv"
)

// result is one row of the fault table.
type result struct {
	Fault    string
	Expected int           // distinct photos uploaded
	Ready    int           // of them, ready (cull, search or ai)
	Failed   int           // of them, failed with a reason
	Rerun    int           // jobs that ran more than once
	Recover  time.Duration // from the fault to every asset final and attested
}

var table struct {
	sync.Mutex
	rows []result
}

func record(r result) {
	table.Lock()
	defer table.Unlock()
	table.rows = append(table.rows, r)
}

// writeTable writes the rows gathered to artifacts/faults.txt, and to
// stdout in the long form.
func writeTable() {
	table.Lock()
	rows := append([]result(nil), table.rows...)
	table.Unlock()
	if len(rows) == 0 {
		return
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Fault < rows[j].Fault })
	var b strings.Builder
	form := "short form"
	if long {
		form = "long form (LIGHTBOX_CHAOS=1)"
	}
	fmt.Fprintf(&b, "fault suite, %s, %s\n%-28s %8s %6s %6s %7s %10s\n", time.Now().UTC().Format(time.RFC3339), form, "fault", "expected", "ready", "failed", "re-run", "recovered")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-28s %8d %6d %6d %7d %9.1fs\n", r.Fault, r.Expected, r.Ready, r.Failed, r.Rerun, r.Recover.Seconds())
	}
	if long {
		fmt.Print(b.String())
	}
	dir := filepath.Join("..", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		os.WriteFile(filepath.Join(dir, "faults.txt"), []byte(b.String()), 0o644)
	}
}

// count runs a query that answers one number.
func count(t testing.TB, db *sqlx.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Get(&n, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// tryCount is count for a database that may be down: -1 then.
func tryCount(db *sqlx.DB, q string, args ...any) int {
	var n int
	if err := db.Get(&n, q, args...); err != nil {
		return -1
	}
	return n
}

// settle waits until the project's work is over (every finalized asset in
// a final state, no job queued or running, every attestation published),
// then checks that nothing was lost or done twice and returns the row.
func settle(t testing.TB, db *sqlx.DB, fault, project string, want []photo, since time.Time) result {
	t.Helper()
	// Attestations a flush was signing when a process or Postgres went
	// away wait chain.StaleAfter before the sweeper signs them again.
	wait := max(patience, chain.StaleAfter+2*time.Minute)
	settled := false
	defer func() {
		if settled {
			return
		}
		// The wait timed out: say what is still open.
		var open []string
		db.Select(&open, `SELECT 'asset ' || status || ' ' || count(*) FROM assets WHERE project_id = $1 AND status = 'uploaded' GROUP BY status
			UNION ALL SELECT 'job ' || type || ' ' || status || ' ' || count(*) FROM jobs
				WHERE project_id = $1 AND status IN ('queued', 'running') GROUP BY type, status
			UNION ALL SELECT 'attestation ' || q.status || ' ' || count(*) FROM attestation_queue q JOIN assets a ON a.id = q.asset_id
				WHERE a.project_id = $1 AND q.status IN ('pending', 'signing', 'failed') GROUP BY q.status`, project)
		t.Logf("%s: still open: %v", fault, open)
	}()
	testenv.Eventually(t, fault+": the project's work to be over", wait, func() bool {
		return tryCount(db, `SELECT
			(SELECT count(*) FROM assets WHERE project_id = $1 AND status = 'uploaded') +
			(SELECT count(*) FROM jobs WHERE project_id = $1 AND status IN ('queued', 'running')) +
			(SELECT count(*) FROM exports WHERE project_id = $1 AND status IN ('queued', 'running')) +
			(SELECT count(*) FROM attestation_queue q JOIN assets a ON a.id = q.asset_id
				WHERE a.project_id = $1 AND q.status IN ('pending', 'signing', 'failed'))`, project) == 0
	})
	settled = true
	r := result{Fault: fault, Expected: len(want), Recover: time.Since(since)}

	// Each photo counts once, however many times a retrying client sent it.
	sums := make([]string, len(want))
	for i, p := range want {
		sums[i] = p.Sum
	}
	var states []struct {
		Sum    string  `db:"checksum_sha256"`
		Status string  `db:"status"`
		Code   *string `db:"error_code"`
	}
	if err := db.Select(&states, `SELECT checksum_sha256, status, error_code FROM assets
		WHERE project_id = $1 AND status <> 'pending_upload'`, project); err != nil {
		t.Fatal(err)
	}
	best := map[string]string{}
	for _, s := range states {
		switch s.Status {
		case "cull", "search", "ai":
			best[s.Sum] = "ready"
		case "failed":
			if s.Code == nil || *s.Code == "" {
				t.Errorf("%s: an asset failed without a reason", fault)
			}
			if best[s.Sum] == "" {
				best[s.Sum] = "failed"
			}
		case "duplicate":
		default:
			t.Errorf("%s: an asset ended %q", fault, s.Status)
		}
	}
	for _, s := range sums {
		switch best[s] {
		case "ready":
			r.Ready++
		case "failed":
			r.Failed++
		default:
			t.Errorf("%s: photo %s never became an asset", fault, s[:12])
		}
	}

	// Nothing done twice in its effects, nothing lost.
	if n := count(t, db, `SELECT count(*) FROM assets a WHERE a.project_id = $1 AND a.status IN ('cull', 'search', 'ai')
		AND (SELECT count(*) FROM asset_files f WHERE f.asset_id = a.id AND f.kind IN ('thumbnail', 'preview')) <> 2`, project); n > 0 {
		t.Errorf("%s: %d ready assets lack a thumbnail or preview", fault, n)
	}
	if n := count(t, db, `SELECT count(*) FROM assets a WHERE a.project_id = $1 AND a.status NOT IN ('pending_upload', 'duplicate')
		AND (SELECT count(*) FROM attestations x WHERE x.asset_id = a.id) <> 1`, project); n > 0 {
		t.Errorf("%s: %d assets have no attestation or more than one", fault, n)
	}
	if n := count(t, db, `SELECT count(*) FROM attestation_queue q JOIN assets a ON a.id = q.asset_id
		WHERE a.project_id = $1 AND q.status = 'abandoned'`, project); n > 0 {
		t.Errorf("%s: %d attestations abandoned", fault, n)
	}
	if n := count(t, db, `SELECT count(*) FROM batches b WHERE b.project_id = $1 AND (b.status = 'running'
		OR b.completed <> (SELECT count(*) FROM jobs j WHERE j.batch_id = b.id AND j.status = 'done')
		OR b.failed <> (SELECT count(*) FROM jobs j WHERE j.batch_id = b.id AND j.status = 'failed'))`, project); n > 0 {
		t.Errorf("%s: %d batches whose counters disagree with their jobs, or still running", fault, n)
	}
	if n := count(t, db, `SELECT count(*) FROM (SELECT asset_id, type FROM jobs WHERE project_id = $1 AND asset_id IS NOT NULL
		AND status = 'done' GROUP BY asset_id, type HAVING count(*) > 1) d`, project); n > 0 {
		t.Errorf("%s: %d assets with the same job done twice", fault, n)
	}
	if n := count(t, db, `SELECT count(*) FROM exports WHERE project_id = $1
		AND status <> 'done' AND (status <> 'failed' OR error_code IS NULL)`, project); n > 0 {
		t.Errorf("%s: %d exports neither done nor failed with a reason", fault, n)
	}
	r.Rerun = count(t, db, `SELECT count(*) FROM jobs WHERE project_id = $1 AND attempt > 1`, project)
	if r.Ready+r.Failed != r.Expected {
		t.Errorf("%s: %d photos, %d ready and %d failed", fault, r.Expected, r.Ready, r.Failed)
	}
	t.Logf("%s: %d photos, %d ready, %d failed, %d jobs re-run, recovered in %.1fs",
		fault, r.Expected, r.Ready, r.Failed, r.Rerun, r.Recover.Seconds())
	record(r)
	return r
}
