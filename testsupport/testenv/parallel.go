package testenv

import (
	"flag"
	"fmt"
)

// Parallel sets -test.parallel to n unless the command line set it, for a
// package whose tests mostly wait (on a lease, an outage, a round trip to
// Postgres) and so run more at once than the cores. Call it from TestMain.
func Parallel(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", fmt.Sprint(n))
	}
}
