//go:build !cgo

package worker_test

import (
	"testing"
	"time"
)

// decodeFloor needs libvips; without cgo the pipeline runs on the Go
// engine and has no libvips floor to compare with.
func decodeFloor(b *testing.B, _ int, _ func(int) []byte) time.Duration {
	b.Skip("the decode floor is measured with libvips, which needs cgo")
	return 0
}

// processAlone needs libvips too: the worker's default engine.
func processAlone(b *testing.B, _, _ int, _ func(int) []byte) time.Duration {
	b.Skip("the image step alone is measured with libvips, which needs cgo")
	return 0
}
