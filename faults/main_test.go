package faults_test

import (
	"os"
	"testing"

	"lightbox/testsupport/testenv"
)

func TestMain(m *testing.M) {
	// The faults mostly wait (for a lease to run out, an outage to end), so
	// they run side by side, not two at a time.
	testenv.Parallel(8)
	code := m.Run()
	writeTable()
	os.Exit(code)
}
