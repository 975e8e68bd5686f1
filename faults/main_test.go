package faults_test

import (
	"flag"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// The faults mostly wait (for a lease to run out, an outage to end), so
	// they run side by side, not two at a time, unless -parallel says so.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", "8")
	}
	code := m.Run()
	writeTable()
	os.Exit(code)
}
