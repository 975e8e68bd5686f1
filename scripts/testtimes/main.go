// Command testtimes reads `go test -json` on its standard input, prints
// what `go test` prints without -json (each package's result, the output
// of failed tests, build errors), and at the end writes where the time
// went: each package's wall time and the slowest tests. With -alone it
// also lists the tests testenv.Alone put off, a line "package test" each,
// for scripts/test.sh to run after the rest.
//
//	go test -json ./... | go run ./scripts/testtimes -o artifacts/test-times.txt -alone artifacts/alone.txt
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (see go doc test2json).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build output
	Test       string
	Elapsed    float64
	Output     string
}

// test is one top-level test's record.
type test struct {
	pkg, name string
	start     time.Time // run, or cont for a parallel test: its pause does not count
	wall      time.Duration
	output    []string
	alone     bool // skipped by testenv.Alone
}

// aloneMark is testenv.AloneMark, which a test testenv.Alone skipped says.
const aloneMark = "lightbox:alone"

func main() {
	out := flag.String("o", "", "write the times to this file")
	top := flag.Int("top", 30, "how many of the slowest tests to list")
	aloneOut := flag.String("alone", "", "write the tests testenv.Alone skipped to this file")
	flag.Parse()

	var (
		tests    = map[string]*test{} // package + "\x00" + top-level name
		done     []*test
		later    strings.Builder // the tests testenv.Alone skipped
		packages = map[string]float64{}
	)
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var e event
			if json.Unmarshal(line, &e) != nil || e.Action == "" {
				os.Stdout.Write(line) // not JSON: pass it on
				continue
			}
			switch {
			case e.Action == "build-output":
				fmt.Print(e.Output)
			case e.Test == "":
				if e.Action == "output" && !quiet(e.Output) {
					fmt.Print(e.Output)
				}
				if e.Action == "pass" || e.Action == "fail" {
					packages[e.Package] = e.Elapsed
				}
			default:
				name, _, _ := strings.Cut(e.Test, "/")
				key := e.Package + "\x00" + name
				t := tests[key]
				if t == nil {
					t = &test{pkg: e.Package, name: name, start: e.Time}
					tests[key] = t
				}
				switch {
				case e.Action == "output":
					t.alone = t.alone || e.Test == name && strings.Contains(e.Output, aloneMark)
					if !quiet(e.Output) {
						t.output = append(t.output, e.Output)
					}
				case e.Test != name:
				case e.Action == "cont":
					t.start = e.Time
				case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
					if e.Action == "fail" {
						fmt.Print(strings.Join(t.output, ""))
					}
					if e.Action == "skip" && t.alone {
						fmt.Fprintf(&later, "%s %s\n", t.pkg, t.name)
					}
					t.wall, t.output = e.Time.Sub(t.start), nil
					done = append(done, t)
					delete(tests, key)
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "testtimes:", err)
			os.Exit(1)
		}
	}
	// A test binary that died (a panic, a timeout) leaves its running
	// tests unfinished: their output says why.
	for _, t := range tests {
		fmt.Print(strings.Join(t.output, ""))
	}
	write(*out, report(packages, done, *top))
	write(*aloneOut, later.String())
}

// write writes s to the file at path, unless path is empty.
func write(path, s string) {
	if path == "" {
		return
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(1)
	}
}

// quiet reports whether a package's line is one `go test` leaves out
// without -v.
func quiet(line string) bool {
	for _, p := range []string{"=== ", "--- PASS", "--- SKIP", "PASS\n"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

func report(packages map[string]float64, tests []*test, top int) string {
	var b strings.Builder
	names := make([]string, 0, len(packages))
	var sum float64
	for p, s := range packages {
		names = append(names, p)
		sum += s
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(packages[b], packages[a]), cmp.Compare(a, b)) })
	fmt.Fprintf(&b, "Packages by wall time of their tests (s); %.0f s in all\n", sum)
	for _, p := range names {
		if packages[p] >= 0.5 {
			fmt.Fprintf(&b, "%8.1f  %s\n", packages[p], p)
		}
	}
	slices.SortFunc(tests, func(x, y *test) int { return cmp.Compare(y.wall, x.wall) })
	fmt.Fprintf(&b, "\nThe %d slowest tests (s; a parallel test from its resume)\n", min(top, len(tests)))
	for _, t := range tests[:min(top, len(tests))] {
		fmt.Fprintf(&b, "%8.1f  %s %s\n", t.wall.Seconds(), t.pkg, t.name)
	}
	return b.String()
}
