//go:build cgo

package imaging

/*
#cgo CFLAGS: -O3
#include <stdint.h>
#include <stdlib.h>

// lb_luma_stats fills out with lumaStats' sums of w×h RGBA pixels, the
// same integers goLumaStats adds up. Each row is summed in 32 bits and
// the interior's Laplacian in runs of at most 2048 columns, which cannot
// overflow them (2048 × 1020² < 2³²), so the loops vectorise; the row and
// run totals go into 64 bits. GCC on x86-64 builds it twice, for AVX2 and
// for any CPU, and picks one at load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LB_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LB_CLONES
#endif
LB_CLONES
static int lb_luma_stats(const unsigned char *pix, int w, int h, int stride, uint32_t hi_level, uint32_t lo_level, int64_t *out) {
	unsigned char *g = malloc((size_t) w * h);
	if (g == NULL) return -1;
	int64_t sum = 0, hi = 0, lo = 0, lap = 0, lap2 = 0;
	for (int y = 0; y < h; y++) {
		const unsigned char *p = pix + (size_t) y * stride;
		unsigned char *o = g + (size_t) y * w;
		uint32_t rs = 0, rh = 0, rl = 0;
		for (int x = 0; x < w; x++) {
			uint32_t v = (299u * p[4 * x] + 587u * p[4 * x + 1] + 114u * p[4 * x + 2] + 500u) / 1000u;
			o[x] = (unsigned char) v;
			rs += v;
			rh += v >= hi_level;
			rl += v <= lo_level;
		}
		sum += rs;
		hi += rh;
		lo += rl;
	}
	for (int y = 1; y < h - 1; y++) {
		const unsigned char *u = g + (size_t) (y - 1) * w, *r = u + w, *d = r + w;
		for (int x0 = 1; x0 < w - 1; x0 += 2048) {
			int x1 = x0 + 2048 < w - 1 ? x0 + 2048 : w - 1;
			int32_t s = 0;
			uint32_t s2 = 0;
			for (int x = x0; x < x1; x++) {
				int32_t l = r[x - 1] + r[x + 1] + u[x] + d[x] - 4 * r[x];
				s += l;
				s2 += (uint32_t) (l * l);
			}
			lap += s;
			lap2 += s2;
		}
	}
	free(g);
	out[0] = sum;
	out[1] = hi;
	out[2] = lo;
	out[3] = lap;
	out[4] = lap2;
	return 0;
}
*/
import "C"

import (
	"image"
	"runtime"
	"unsafe"
)

// lumaStatsOf is goLumaStats in C, vectorised: a fifth of its time on the
// analysis image, which every photo's Quality is measured on.
func lumaStatsOf(img *image.RGBA) lumaStats {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if w == 0 || h == 0 {
		return lumaStats{}
	}
	var out [5]C.int64_t
	if C.lb_luma_stats((*C.uchar)(unsafe.Pointer(&img.Pix[0])), C.int(w), C.int(h), C.int(img.Stride), highlightLevel, shadowLevel, &out[0]) != 0 {
		return goLumaStats(img) // malloc failed
	}
	runtime.KeepAlive(img)
	return lumaStats{pixels: int64(w * h), sum: int64(out[0]), hi: int64(out[1]), lo: int64(out[2]), lap: int64(out[3]), lap2: int64(out[4])}
}
