package testenv

import (
	"os"
	"testing"
)

// AloneMark is in the skip message of a test Alone put off, so that the
// runner of the suite can find it in `go test -json` and run it later.
const AloneMark = "lightbox:alone"

// Alone marks a test whose verdict compares timings or CPU: a server's p99
// beside a control's, the CPU of thirty password checks beside ten. On a
// machine busy with the rest of the suite such figures swing by more than
// the margins that tell a defence from its absence, so `make test` runs
// these tests after everything else, one at a time: with LIGHTBOX_ALONE
// set to "later" (its busy passes) Alone skips the test, and
// scripts/test.sh runs each test it skipped again, alone. A plain go test
// runs the test at once.
func Alone(t testing.TB) {
	t.Helper()
	if os.Getenv("LIGHTBOX_ALONE") == "later" {
		t.Skip(AloneMark + ": it measures timings, and runs after the rest of the suite")
	}
}
