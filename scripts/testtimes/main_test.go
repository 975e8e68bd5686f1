package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A package's tests run under go test -json and through testtimes -alone:
// the file lists the test testenv.Alone would have skipped, and neither
// the one skipped for another reason nor the one that passed.
func TestAloneListsTheTestsPutOff(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.org/timings\n\ngo 1.22\n",
		"timings_test.go": `package timings

import "testing"

func TestMeasures(t *testing.T) { t.Skip("` + aloneMark + `: it measures timings") }
func TestNeedsADisk(t *testing.T) { t.Skip("no disk") }
func TestPasses(t *testing.T) { t.Run("sub", func(t *testing.T) { t.Skip("` + aloneMark + `") }) }
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	self := filepath.Join(t.TempDir(), "testtimes")
	if out, err := exec.Command("go", "build", "-o", self, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	list := filepath.Join(dir, "alone.txt")
	run := exec.Command("sh", "-c", "go test -json -count=1 . | "+self+" -alone "+list)
	run.Dir = dir
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("go test | testtimes: %v\n%s", err, out)
	}
	got, err := os.ReadFile(list)
	if err != nil {
		t.Fatal(err)
	}
	if want := "example.org/timings TestMeasures\n"; string(got) != want {
		t.Fatalf("the tests put off: %q, want %q", got, want)
	}
	if strings.Contains(string(got), "TestPasses") {
		t.Fatal("a test whose subtest skipped is listed")
	}
}
