//go:build !cgo

package imaging

import (
	"testing"
	"time"
)

// timedDecodes needs libvips: without cgo there is nothing to time.
func timedDecodes(*testing.B, [][]byte) time.Duration { return 0 }
