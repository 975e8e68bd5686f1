package e2e_test

import (
	"os"
	"testing"

	"lightbox/testsupport/testenv"
)

func TestMain(m *testing.M) {
	// Most of a test's time goes on waiting for the pipeline, a rate
	// limit, an expiry or a failover, so four run at once rather than two.
	testenv.Parallel(4)
	code := m.Run()
	if chrome.stop != nil {
		chrome.stop()
	}
	os.Exit(code)
}
