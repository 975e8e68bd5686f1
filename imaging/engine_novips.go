//go:build !cgo

package imaging

import (
	"errors"
)

// DefaultEngine is the engine New picks for "": pure Go when built without cgo.
const DefaultEngine = EngineGo

func newVips(Config) (Engine, error) {
	return nil, errors.New(`imaging: the "vips" engine needs a build with cgo (CGO_ENABLED=1) and libvips`)
}

// Shutdown does nothing in a build without libvips.
func Shutdown() {}
