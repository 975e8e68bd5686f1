//go:build !cgo

package imaging

import "image"

func lumaStatsOf(img *image.RGBA) lumaStats { return goLumaStats(img) }
