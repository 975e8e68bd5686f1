//go:build cgo

package imaging

/*
#cgo CFLAGS: -O3
#cgo LDFLAGS: -lm
#include <math.h>
#include <stdlib.h>
#include <string.h>

// A window of Lanczos3 weights for each output sample along one axis: out
// samples scale input samples apart, centred on the input (a size rounded
// from the scale leaves a fraction of a sample over, split between the
// edges). The kernel is stretched by the scale so it filters what would
// alias, and each window is normalised to sum to 1. Windows reach past
// the edges, where the edge sample repeats, as in libvips' resize
// (TestPreviewLikeLibvips measures how close the two come).
typedef struct {
	int taps;     // weights per output sample (the widest window)
	int *first;   // first input sample of each window (maybe before 0)
	int *n;       // samples in each window (at most taps)
	float *w;     // taps weights per output sample
} lb_windows;

static double lb_lanczos3(double x) {
	if (x == 0) return 1;
	if (x <= -3 || x >= 3) return 0;
	double px = M_PI * x;
	return 3 * sin(px) * sin(px / 3) / (px * px);
}

static int lb_windows_make(lb_windows *win, int in, int out, double scale) {
	double fs = scale < 1 ? 1 : scale, support = 3 * fs;
	win->taps = 2 * (int) ceil(support) + 1;
	win->first = malloc(sizeof(int) * out);
	win->n = malloc(sizeof(int) * out);
	win->w = calloc((size_t) out * win->taps, sizeof(float));
	double *tmp = malloc(sizeof(double) * win->taps);
	if (!win->first || !win->n || !win->w || !tmp) {
		free(tmp);
		return -1;
	}
	for (int o = 0; o < out; o++) {
		double centre = (o + 0.5) * scale + (in - out * scale) / 2, sum = 0;
		int a = (int) floor(centre - support + 0.5), b = (int) floor(centre + support + 0.5);
		if (b - a > win->taps) b = a + win->taps; // never, but w must not overflow
		for (int i = a; i < b; i++) sum += tmp[i - a] = lb_lanczos3((i - centre + 0.5) / fs);
		for (int i = a; i < b; i++) win->w[(size_t) o * win->taps + i - a] = tmp[i - a] / sum;
		win->first[o] = a;
		win->n[o] = b - a;
	}
	free(tmp);
	return 0;
}

static void lb_windows_free(lb_windows *win) {
	free(win->first);
	free(win->n);
	free(win->w);
}

static unsigned char lb_clamp(float v) {
	v += 0.5f;
	return v <= 0 ? 0 : v >= 255 ? 255 : (unsigned char) v;
}

// lb_reducev resamples h rows of w packed RGB pixels to oh rows. The same
// weights apply across a whole row, so the inner loop runs over
// contiguous samples and the compiler vectorises it.
static int lb_reducev(const unsigned char *in, int w, int h, unsigned char *out, int oh, double scale) {
	lb_windows win = {0};
	size_t row = (size_t) w * 3;
	float *acc = malloc(sizeof(float) * row);
	int rc = acc && lb_windows_make(&win, h, oh, scale) == 0 ? 0 : -1;
	for (int y = 0; rc == 0 && y < oh; y++) {
		const float *wt = win.w + (size_t) y * win.taps;
		memset(acc, 0, sizeof(float) * row);
		for (int k = 0; k < win.n[y]; k++) {
			int sy = win.first[y] + k;
			sy = sy < 0 ? 0 : sy >= h ? h - 1 : sy;
			const unsigned char *src = in + (size_t) sy * row;
			float wk = wt[k];
			for (size_t i = 0; i < row; i++) acc[i] += wk * src[i];
		}
		unsigned char *dst = out + (size_t) y * row;
		for (size_t i = 0; i < row; i++) dst[i] = lb_clamp(acc[i]);
	}
	lb_windows_free(&win);
	free(acc);
	return rc;
}

// LB_ROWS rows are resampled across at once: their samples are
// interleaved column by column, so each weight multiplies LB_ROWS×3
// contiguous samples, which vectorise, where one row's window of a dozen
// RGB triples would not. Four rows keep the sums in registers.
#define LB_ROWS 4

#include <stdint.h>

// The horizontal pass works in 16-bit fixed point: weights in units of
// 1/16384, and each column's 12 samples stored beside the next column's,
// so a pair of taps is one multiply-add of sample pairs by weight pairs
// (SSE2's pmaddwd: twice the samples per instruction of float).
// lb_pair_columns lays out those pairs; lb_dot sums np pairs of taps from
// col (a pair of taps spans two columns) for the 12 samples and writes
// them to v[0..11], rounded and clamped.
#if defined(__SSE2__)
#include <emmintrin.h>

static void lb_pair_columns(const int16_t *t1, int16_t *t2, int tw) {
	for (int c = 0; c + 1 < tw; c++) {
		const int16_t *a = t1 + (size_t) c * 12, *b = a + 12;
		__m128i a0 = _mm_loadu_si128((const __m128i *) a), b0 = _mm_loadu_si128((const __m128i *) b);
		__m128i a1 = _mm_loadl_epi64((const __m128i *) (a + 8)), b1 = _mm_loadl_epi64((const __m128i *) (b + 8));
		__m128i *d = (__m128i *) (t2 + (size_t) c * 24);
		_mm_storeu_si128(d, _mm_unpacklo_epi16(a0, b0));
		_mm_storeu_si128(d + 1, _mm_unpackhi_epi16(a0, b0));
		_mm_storeu_si128(d + 2, _mm_unpacklo_epi16(a1, b1));
	}
}

static void lb_dot(const int16_t *col, const int32_t *wp, int np, unsigned char v[16]) {
	__m128i s0 = _mm_set1_epi32(1 << 13), s1 = s0, s2 = s0;
	const __m128i *c = (const __m128i *) col;
	for (int p = 0; p < np; p++, c += 6) {
		__m128i wv = _mm_set1_epi32(wp[p]);
		s0 = _mm_add_epi32(s0, _mm_madd_epi16(_mm_loadu_si128(c), wv));
		s1 = _mm_add_epi32(s1, _mm_madd_epi16(_mm_loadu_si128(c + 1), wv));
		s2 = _mm_add_epi32(s2, _mm_madd_epi16(_mm_loadu_si128(c + 2), wv));
	}
	s0 = _mm_srai_epi32(s0, 14);
	s1 = _mm_srai_epi32(s1, 14);
	s2 = _mm_srai_epi32(s2, 14);
	_mm_storeu_si128((__m128i *) v, _mm_packus_epi16(_mm_packs_epi32(s0, s1), _mm_packs_epi32(s2, s2)));
}
#else
static void lb_pair_columns(const int16_t *t1, int16_t *t2, int tw) {
	for (int c = 0; c + 1 < tw; c++)
		for (int j = 0; j < 12; j++) {
			t2[(size_t) c * 24 + 2 * j] = t1[(size_t) c * 12 + j];
			t2[(size_t) c * 24 + 2 * j + 1] = t1[(size_t) (c + 1) * 12 + j];
		}
}

static void lb_dot(const int16_t *col, const int32_t *wp, int np, unsigned char v[16]) {
	int32_t s[12];
	for (int j = 0; j < 12; j++) s[j] = 1 << 13;
	for (int p = 0; p < np; p++, col += 48) {
		int32_t w0 = (int16_t) (wp[p] & 0xffff), w1 = (int16_t) ((uint32_t) wp[p] >> 16);
		for (int j = 0; j < 12; j++) s[j] += col[2 * j] * w0 + col[2 * j + 1] * w1;
	}
	for (int j = 0; j < 12; j++) {
		int32_t x = s[j] >> 14;
		v[j] = x < 0 ? 0 : x > 255 ? 255 : (unsigned char) x;
	}
	memset(v + 12, 0, 4);
}
#endif

// lb_reduceh resamples h rows of w packed RGB pixels to ow columns (within
// a level of float: TestLanczosRGB). The interleaved rows carry pad
// columns on each side, copies of the edge, for the windows that reach
// past it.
static int lb_reduceh(const unsigned char *in, int w, int h, unsigned char *out, int ow, double scale) {
	lb_windows win = {0};
	if (lb_windows_make(&win, w, ow, scale) != 0) {
		lb_windows_free(&win);
		return -1;
	}
	int pairs = (win.taps + 1) / 2, pad = win.taps + 2, tw = w + 2 * pad;
	// wq: each output's weights, in pairs packed as one 32-bit lane; a
	// window's weights are rounded to sum to exactly 16384.
	int32_t *wq = calloc((size_t) ow * pairs, sizeof(int32_t));
	// t1: the group's samples, column by column, LB_ROWS×3 each; t2: the
	// same in pairs of columns (lb_pair_columns).
	int16_t *t1 = malloc(sizeof(int16_t) * (size_t) tw * 12);
	int16_t *t2 = malloc(sizeof(int16_t) * (size_t) tw * 24);
	int rc = wq && t1 && t2 ? 0 : -1;
	for (int x = 0; rc == 0 && x < ow; x++) {
		int16_t q[win.taps + 1];
		int sum = 0, big = 0;
		memset(q, 0, sizeof(q));
		for (int k = 0; k < win.n[x]; k++) {
			q[k] = (int16_t) lrintf(win.w[(size_t) x * win.taps + k] * 16384);
			sum += q[k];
			if (q[k] > q[big]) big = k;
		}
		q[big] += 16384 - sum;
		for (int p = 0; p < pairs; p++)
			wq[(size_t) x * pairs + p] = (int32_t) (uint16_t) q[2 * p] | (int32_t) ((uint32_t) (uint16_t) q[2 * p + 1] << 16);
	}
	for (int y0 = 0; rc == 0 && y0 < h; y0 += LB_ROWS) {
		int rows = h - y0 < LB_ROWS ? h - y0 : LB_ROWS;
		if (rows < LB_ROWS) memset(t1, 0, sizeof(int16_t) * (size_t) tw * 12);
		for (int r = 0; r < rows; r++) {
			const unsigned char *src = in + (size_t) (y0 + r) * w * 3;
			int16_t *col = t1 + r * 3;
			for (int x = -pad; x < w + pad; x++, col += 12) {
				int sx = x < 0 ? 0 : x >= w ? w - 1 : x;
				col[0] = src[sx * 3];
				col[1] = src[sx * 3 + 1];
				col[2] = src[sx * 3 + 2];
			}
		}
		lb_pair_columns(t1, t2, tw);
		for (int x = 0; x < ow; x++) {
			unsigned char v[16];
			lb_dot(t2 + (size_t) (win.first[x] + pad) * 24, wq + (size_t) x * pairs, (win.n[x] + 1) / 2, v);
			// Four bytes at a time where the next pixel's store will
			// overwrite the fourth.
			for (int r = 0; r < rows; r++) {
				unsigned char *dst = out + ((size_t) (y0 + r) * ow + x) * 3;
				if (x + 1 < ow) {
					memcpy(dst, v + r * 3, 4);
				} else {
					dst[0] = v[r * 3];
					dst[1] = v[r * 3 + 1];
					dst[2] = v[r * 3 + 2];
				}
			}
		}
	}
	lb_windows_free(&win);
	free(wq);
	free(t1);
	free(t2);
	return rc;
}
*/
import "C"

import (
	"errors"
	"runtime"
	"unsafe"
)

// lanczosRGB resamples packed 3-band pixels from w×h to ow×oh with
// Lanczos3, one axis at a time (height first), shrinking both by shrink,
// from which the sizes were rounded, or with shrink 0 each by the ratio
// of its sizes. pix is overwritten: the result may share its memory.
// libvips 8.14 does its vertical pass with vector instructions but its
// horizontal one in plain C, which took as long as decoding the photo;
// this one lays four rows side by side so both passes vectorise.
func lanczosRGB(pix []byte, w, h, ow, oh int, shrink float64) ([]byte, error) {
	if w <= 0 || h <= 0 || ow <= 0 || oh <= 0 || len(pix) < 3*w*h || shrink < 0 {
		return nil, errors.New("imaging: resample of an empty or short image")
	}
	vs, hs := shrink, shrink
	if shrink == 0 {
		vs, hs = float64(h)/float64(oh), float64(w)/float64(ow)
	}
	if oh != h {
		out := make([]byte, 3*w*oh)
		if C.lb_reducev((*C.uchar)(unsafe.Pointer(&pix[0])), C.int(w), C.int(h), (*C.uchar)(unsafe.Pointer(&out[0])), C.int(oh), C.double(vs)) != 0 {
			return nil, errors.New("imaging: out of memory resampling")
		}
		runtime.KeepAlive(pix)
		pix, h = out, oh
	}
	if ow != w {
		// Each group of rows is read before its results are written, and
		// a narrower row never reaches past the start of the next group,
		// so a shrink works in place: the preview's pass needs no second
		// buffer.
		out := pix[:3*ow*h]
		if ow > w {
			out = make([]byte, 3*ow*h)
		}
		if C.lb_reduceh((*C.uchar)(unsafe.Pointer(&pix[0])), C.int(w), C.int(h), (*C.uchar)(unsafe.Pointer(&out[0])), C.int(ow), C.double(hs)) != 0 {
			return nil, errors.New("imaging: out of memory resampling")
		}
		runtime.KeepAlive(pix)
		pix = out
	}
	return pix, nil
}
