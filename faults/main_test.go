package faults_test

import (
	"os"
	"testing"

	"lightbox/internal/procs"
)

func TestMain(m *testing.M) {
	code := procs.Main(m)
	writeTable()
	os.Exit(code)
}
