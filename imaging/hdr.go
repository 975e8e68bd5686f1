package imaging

import (
	"bytes"
	"encoding/binary"
	"math"
)

// HDR to SDR. libvips (8.14) decodes a PQ or HLG HEIF/AVIF to its coded
// values and ignores the transfer, which would show a flat, grey picture.
// toneMapSDR maps the 8-bit coded samples of a preview to sRGB: the
// transfer's inverse to linear light with SDR reference white (203 cd/m²)
// at 1.0, the primaries to sRGB's, a curve that keeps tones below a knee
// as they are and rolls the rest (highlights up to 1000 cd/m² and beyond)
// smoothly off into white, then the sRGB curve.

const (
	sdrWhiteNits = 203.0
	hdrPeakNits  = 1000.0
)

// toLinearSDR returns, for each 8-bit coded value, linear light relative
// to SDR reference white.
func toLinearSDR(transfer int) [256]float64 {
	var lut [256]float64
	for i := range lut {
		e := float64(i) / 255
		switch transfer {
		case transferPQ:
			const m1, m2 = 2610.0 / 16384, 2523.0 / 4096 * 128
			const c1, c2, c3 = 3424.0 / 4096, 2413.0 / 4096 * 32, 2392.0 / 4096 * 32
			p := math.Pow(e, 1/m2)
			lut[i] = math.Pow(max(p-c1, 0)/(c2-c3*p), 1/m1) * 10000 / sdrWhiteNits
		case transferHLG:
			const a, b, c = 0.17883277, 0.28466892, 0.55991073
			var scene float64
			if e <= 0.5 {
				scene = e * e / 3
			} else {
				scene = (math.Exp((e-c)/a) + b) / 12
			}
			// The reference display's system gamma (1.2 at 1000 cd/m²),
			// applied per channel as an approximation.
			lut[i] = math.Pow(scene, 1.2) * hdrPeakNits / sdrWhiteNits
		default:
			lut[i] = e
		}
	}
	return lut
}

// toSRGBPrimaries converts linear RGB in the given primaries to sRGB's.
func toSRGBPrimaries(primaries int) [3][3]float64 {
	switch primaries {
	case primariesP3:
		return [3][3]float64{{1.2249, -0.2247, 0}, {-0.0420, 1.0419, 0}, {-0.0197, -0.0786, 1.0979}}
	case primariesBT2020:
		return [3][3]float64{{1.6605, -0.5876, -0.0728}, {-0.1246, 1.1329, -0.0083}, {-0.0182, -0.1006, 1.1187}}
	}
	return [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
}

// toneMapSDR rewrites 8-bit RGB pixels in place, stride bytes apart (the
// first three of each are R, G, B).
func toneMapSDR(pix []byte, stride, primaries, transfer int) {
	lin := toLinearSDR(transfer)
	m := toSRGBPrimaries(primaries)
	const knee = 0.75
	var enc [4096]byte // sRGB curve over [0, 1]
	for i := range enc {
		enc[i] = byte(math.Round(encodeSRGB(float64(i)/float64(len(enc)-1)) * 255))
	}
	for i := 0; i+2 < len(pix); i += stride {
		r, g, b := lin[pix[i]], lin[pix[i+1]], lin[pix[i+2]]
		for c := 0; c < 3; c++ {
			x := max(m[c][0]*r+m[c][1]*g+m[c][2]*b, 0)
			if x > knee {
				x = knee + (1-knee)*(1-math.Exp(-(x-knee)/(1-knee)))
			}
			pix[i+c] = enc[int(min(x, 1)*float64(len(enc)-1))]
		}
	}
}

// isSRGBProfile reports whether an ICC profile describes itself as sRGB
// (its 'desc' tag names it), so converting through it would change
// nothing but cost time.
func isSRGBProfile(icc []byte) bool {
	if len(icc) < 132 {
		return false
	}
	n := uint64(binary.BigEndian.Uint32(icc[128:]))
	for i := uint64(0); i < n && 132+12*i+12 <= uint64(len(icc)); i++ {
		e := icc[132+12*i:]
		if string(e[:4]) != "desc" {
			continue
		}
		off, size := uint64(binary.BigEndian.Uint32(e[4:])), uint64(binary.BigEndian.Uint32(e[8:]))
		if off > uint64(len(icc)) || size > uint64(len(icc))-off {
			return false
		}
		desc := icc[off : off+size]
		return bytes.Contains(desc, []byte("sRGB")) || bytes.Contains(desc, []byte("\x00s\x00R\x00G\x00B"))
	}
	return false
}
