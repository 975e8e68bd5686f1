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
	// sin(πx/3) steps by a fixed angle from one tap to the next, so each
	// window takes one sin and one cos, and sin(πx) = 3s - 4s³ of it: the
	// two sins a tap cost 1.1 ms of a 12 MP photo's 16 ms resize.
	double step = M_PI / (3 * fs), ds = sin(step), dc = cos(step);
	for (int o = 0; o < out; o++) {
		double centre = (o + 0.5) * scale + (in - out * scale) / 2, sum = 0;
		int a = (int) floor(centre - support + 0.5), b = (int) floor(centre + support + 0.5);
		if (b - a > win->taps) b = a + win->taps; // never, but w must not overflow
		double s = sin(M_PI * ((a - centre + 0.5) / fs) / 3), c = cos(M_PI * ((a - centre + 0.5) / fs) / 3);
		for (int i = a; i < b; i++) {
			double x = (i - centre + 0.5) / fs, v = 0;
			if (x == 0) {
				v = 1;
			} else if (x > -3 && x < 3) {
				double px = M_PI * x;
				v = 3 * (3 * s - 4 * s * s * s) * s / (px * px);
			}
			sum += tmp[i - a] = v;
			double next = s * dc + c * ds;
			c = c * dc - s * ds;
			s = next;
		}
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

#include <stdint.h>

// lb_quantise turns n float weights summing to 1 into 14-bit fixed point
// summing to exactly 16384 (the largest takes the rounding error), so a
// flat area stays flat.
static void lb_quantise(const float *w, int n, int16_t *q) {
	int sum = 0, big = 0;
	for (int k = 0; k < n; k++) {
		q[k] = (int16_t) lrintf(w[k] * 16384);
		sum += q[k];
		if (q[k] > q[big]) big = k;
	}
	q[big] += 16384 - sum;
}

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

// lb_vrow_* weigh n rows (n even) into one from sample i on, and return
// where they stopped: 14-bit fixed point in 32-bit sums, each pair of rows
// multiplied and added by one instruction (pmaddwd) with the sums kept in
// registers across the rows. lb_vrow_c does the samples the others leave.
static void lb_vrow_c(const unsigned char *const *src, const int16_t *q, int n, size_t from, size_t len, unsigned char *dst) {
	for (size_t i = from; i < len; i++) {
		int32_t s = 1 << 13;
		for (int k = 0; k < n; k++) s += q[k] * src[k][i];
		s >>= 14;
		dst[i] = s < 0 ? 0 : s > 255 ? 255 : (unsigned char) s;
	}
}

#if defined(__SSE2__)
static size_t lb_vrow_sse2(const unsigned char *const *src, const int16_t *q, int n, size_t i, size_t len, unsigned char *dst) {
	const __m128i z = _mm_setzero_si128();
	for (; i + 16 <= len; i += 16) {
		__m128i s0 = _mm_set1_epi32(1 << 13), s1 = s0, s2 = s0, s3 = s0;
		for (int k = 0; k < n; k += 2) {
			__m128i wv = _mm_set1_epi32((int32_t) (uint16_t) q[k] | (int32_t) ((uint32_t) (uint16_t) q[k + 1] << 16));
			__m128i a = _mm_loadu_si128((const __m128i *) (src[k] + i)), b = _mm_loadu_si128((const __m128i *) (src[k + 1] + i));
			__m128i alo = _mm_unpacklo_epi8(a, z), ahi = _mm_unpackhi_epi8(a, z);
			__m128i blo = _mm_unpacklo_epi8(b, z), bhi = _mm_unpackhi_epi8(b, z);
			s0 = _mm_add_epi32(s0, _mm_madd_epi16(_mm_unpacklo_epi16(alo, blo), wv));
			s1 = _mm_add_epi32(s1, _mm_madd_epi16(_mm_unpackhi_epi16(alo, blo), wv));
			s2 = _mm_add_epi32(s2, _mm_madd_epi16(_mm_unpacklo_epi16(ahi, bhi), wv));
			s3 = _mm_add_epi32(s3, _mm_madd_epi16(_mm_unpackhi_epi16(ahi, bhi), wv));
		}
		__m128i lo = _mm_packs_epi32(_mm_srai_epi32(s0, 14), _mm_srai_epi32(s1, 14));
		__m128i hi = _mm_packs_epi32(_mm_srai_epi32(s2, 14), _mm_srai_epi32(s3, 14));
		_mm_storeu_si128((__m128i *) (dst + i), _mm_packus_epi16(lo, hi));
	}
	return i;
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
// The same 32 bytes at a time. AVX2's unpacks and packs work within each
// 16-byte half, and the packs undo the unpacks, so the order comes out
// right without shuffles across the halves.
__attribute__((target("avx2")))
static size_t lb_vrow_avx2(const unsigned char *const *src, const int16_t *q, int n, size_t i, size_t len, unsigned char *dst) {
	const __m256i z = _mm256_setzero_si256();
	for (; i + 32 <= len; i += 32) {
		__m256i s0 = _mm256_set1_epi32(1 << 13), s1 = s0, s2 = s0, s3 = s0;
		for (int k = 0; k < n; k += 2) {
			__m256i wv = _mm256_set1_epi32((int32_t) (uint16_t) q[k] | (int32_t) ((uint32_t) (uint16_t) q[k + 1] << 16));
			__m256i a = _mm256_loadu_si256((const __m256i *) (src[k] + i)), b = _mm256_loadu_si256((const __m256i *) (src[k + 1] + i));
			__m256i alo = _mm256_unpacklo_epi8(a, z), ahi = _mm256_unpackhi_epi8(a, z);
			__m256i blo = _mm256_unpacklo_epi8(b, z), bhi = _mm256_unpackhi_epi8(b, z);
			s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_unpacklo_epi16(alo, blo), wv));
			s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_unpackhi_epi16(alo, blo), wv));
			s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(_mm256_unpacklo_epi16(ahi, bhi), wv));
			s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(_mm256_unpackhi_epi16(ahi, bhi), wv));
		}
		__m256i lo = _mm256_packs_epi32(_mm256_srai_epi32(s0, 14), _mm256_srai_epi32(s1, 14));
		__m256i hi = _mm256_packs_epi32(_mm256_srai_epi32(s2, 14), _mm256_srai_epi32(s3, 14));
		_mm256_storeu_si256((__m256i *) (dst + i), _mm256_packus_epi16(lo, hi));
	}
	return i;
}
#endif

static int lb_simd = 1;

static void lb_set_simd(int on) { lb_simd = on; }

// lb_reducev resamples h rows of w packed RGB pixels to oh rows. The same
// weights apply across a whole row, so each output row is a weighted sum
// of whole input rows, done many samples at a time.
static int lb_reducev(const unsigned char *in, int w, int h, unsigned char *out, int oh, double scale) {
	lb_windows win = {0};
	size_t row = (size_t) w * 3;
	if (lb_windows_make(&win, h, oh, scale) != 0) {
		lb_windows_free(&win);
		return -1;
	}
	int n = win.taps + 1; // room to make the count even
	const unsigned char **src = malloc(sizeof(*src) * n);
	int16_t *q = malloc(sizeof(*q) * n);
	int rc = src && q ? 0 : -1;
#if defined(__x86_64__) && defined(__GNUC__)
	int avx2 = lb_simd && __builtin_cpu_supports("avx2");
#endif
	for (int y = 0; rc == 0 && y < oh; y++) {
		int m = win.n[y];
		lb_quantise(win.w + (size_t) y * win.taps, m, q);
		for (int k = 0; k < m; k++) {
			int sy = win.first[y] + k;
			sy = sy < 0 ? 0 : sy >= h ? h - 1 : sy;
			src[k] = in + (size_t) sy * row;
		}
		if (m % 2) {
			src[m] = src[m - 1];
			q[m++] = 0;
		}
		unsigned char *dst = out + (size_t) y * row;
		size_t done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
		if (avx2) done = lb_vrow_avx2(src, q, m, done, row, dst);
#endif
#if defined(__SSE2__)
		if (lb_simd) done = lb_vrow_sse2(src, q, m, done, row, dst);
#endif
		lb_vrow_c(src, q, m, done, row, dst);
	}
	lb_windows_free(&win);
	free(src);
	free(q);
	return rc;
}

// LB_ROWS rows are resampled across at once: their samples are
// interleaved column by column, so each weight multiplies LB_ROWS×3
// contiguous samples, which vectorise, where one row's window of a dozen
// RGB triples would not. Four rows keep the sums in registers.
#define LB_ROWS 4

// The horizontal pass works in 16-bit fixed point: weights in units of
// 1/16384, and each column's 12 samples stored beside the next column's,
// so a pair of taps is one multiply-add of sample pairs by weight pairs
// (SSE2's pmaddwd: twice the samples per instruction of float). A pair
// column p holds, for each of the 12 samples j (row j/3, channel j%3),
// padded column p's sample then column p+1's: lb_fill_pairs lays them out
// from the rows; lb_dot sums np pairs of taps from col (a pair of taps
// spans two columns) for the 12 samples and writes them to v[0..11],
// rounded and clamped.
static void lb_fill_pairs(const unsigned char *const src[LB_ROWS], int w, int pad, int16_t *t2, int from, int to) {
	for (int p = from; p < to; p++) {
		int16_t *d = t2 + (size_t) p * 24;
		for (int k = 0; k < 2; k++) {
			int x = p + k - pad;
			x = x < 0 ? 0 : x >= w ? w - 1 : x;
			for (int j = 0; j < 12; j++) d[2 * j + k] = src[j / 3][3 * x + j % 3];
		}
	}
}

// lb_fill_pairs_ssse3 is lb_fill_pairs for pair columns wholly inside the
// rows, with 16 bytes of each row readable from the first: one load per
// row and six byte shuffles a pair column, where laying samples out one
// by one took half the pass.
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define LB_SSSE3 1
__attribute__((target("ssse3")))
static void lb_fill_pairs_ssse3(const unsigned char *const src[LB_ROWS], int pad, int16_t *t2, int from, int to) {
	// Byte i of a row's load is channel i%3 of column i/3; -1 gives 0,
	// the high byte of each 16-bit sample.
	const __m128i m0a = _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
	const __m128i m0b = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, -1, 3, -1);
	const __m128i m1a = _mm_setr_epi8(1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1, -1, -1, -1, -1);
	const __m128i m1b = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, 0, -1, 3, -1, 1, -1, 4, -1);
	const __m128i m2a = _mm_setr_epi8(2, -1, 5, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
	const __m128i m2b = _mm_setr_epi8(-1, -1, -1, -1, 0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1);
	for (int p = from; p < to; p++) {
		size_t o = (size_t) 3 * (p - pad);
		__m128i r0 = _mm_loadu_si128((const __m128i *) (src[0] + o));
		__m128i r1 = _mm_loadu_si128((const __m128i *) (src[1] + o));
		__m128i r2 = _mm_loadu_si128((const __m128i *) (src[2] + o));
		__m128i r3 = _mm_loadu_si128((const __m128i *) (src[3] + o));
		__m128i *d = (__m128i *) (t2 + (size_t) p * 24);
		_mm_storeu_si128(d, _mm_or_si128(_mm_shuffle_epi8(r0, m0a), _mm_shuffle_epi8(r1, m0b)));
		_mm_storeu_si128(d + 1, _mm_or_si128(_mm_shuffle_epi8(r1, m1a), _mm_shuffle_epi8(r2, m1b)));
		_mm_storeu_si128(d + 2, _mm_or_si128(_mm_shuffle_epi8(r2, m2a), _mm_shuffle_epi8(r3, m2b)));
	}
}
#endif

// lb_simd is whether lb_reduceh may use lb_fill_pairs_ssse3; a test turns
// it off to compare the two.
static int lb_has_ssse3(void) {
#ifdef LB_SSSE3
	return __builtin_cpu_supports("ssse3");
#else
	return 0;
#endif
}

#if defined(__SSE2__)
#include <emmintrin.h>

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
	// t2: the group's samples in pairs of columns (lb_fill_pairs).
	int16_t *t2 = malloc(sizeof(int16_t) * (size_t) tw * 24);
	int rc = wq && t2 ? 0 : -1;
	// The pair columns the shuffles can lay out: both columns inside the
	// row and 16 bytes readable from the first.
	int lo = pad, hi = w >= 6 ? pad + w - 5 : pad;
#ifdef LB_SSSE3
	int ssse3 = lb_simd && lb_has_ssse3();
#endif
	for (int x = 0; rc == 0 && x < ow; x++) {
		int16_t q[win.taps + 1];
		memset(q, 0, sizeof(q));
		lb_quantise(win.w + (size_t) x * win.taps, win.n[x], q);
		for (int p = 0; p < pairs; p++)
			wq[(size_t) x * pairs + p] = (int32_t) (uint16_t) q[2 * p] | (int32_t) ((uint32_t) (uint16_t) q[2 * p + 1] << 16);
	}
	for (int y0 = 0; rc == 0 && y0 < h; y0 += LB_ROWS) {
		int rows = h - y0 < LB_ROWS ? h - y0 : LB_ROWS;
		// A short last group repeats its first row, whose results for
		// the rows it lacks are not stored.
		const unsigned char *src[LB_ROWS];
		for (int r = 0; r < LB_ROWS; r++) src[r] = in + (size_t) (y0 + (r < rows ? r : 0)) * w * 3;
#ifdef LB_SSSE3
		if (ssse3) {
			lb_fill_pairs(src, w, pad, t2, 0, lo);
			lb_fill_pairs_ssse3(src, pad, t2, lo, hi);
			lb_fill_pairs(src, w, pad, t2, hi, tw - 1);
		} else
#endif
			lb_fill_pairs(src, w, pad, t2, 0, tw - 1);
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

// lanczosShuffles turns the horizontal pass's byte shuffles on or off
// (they are on unless a test turns them off) and says whether this CPU
// has them.
func lanczosShuffles(on bool) bool {
	v := 0
	if on {
		v = 1
	}
	C.lb_set_simd(C.int(v))
	return C.lb_has_ssse3() != 0
}

// lanczosRGB resamples packed 3-band pixels from w×h to ow×oh with
// Lanczos3, one axis at a time (height first), shrinking both by shrink,
// from which the sizes were rounded, or with shrink 0 each by the ratio
// of its sizes. pix is overwritten: the result may share its memory.
// libvips 8.14 does its vertical pass with vector instructions but its
// horizontal one in plain C, which took as long as decoding the photo;
// this one lays four rows side by side so both passes vectorise.
func lanczosRGB(pix []byte, w, h, ow, oh int, shrink float64) ([]byte, error) {
	return lanczosRGBInto(nil, pix, w, h, ow, oh, shrink)
}

// lanczosRGBInto is lanczosRGB with the vertical pass's result in into
// when it holds that many bytes (3·w·oh), else in memory it makes.
func lanczosRGBInto(into, pix []byte, w, h, ow, oh int, shrink float64) ([]byte, error) {
	if w <= 0 || h <= 0 || ow <= 0 || oh <= 0 || len(pix) < 3*w*h || shrink < 0 {
		return nil, errors.New("imaging: resample of an empty or short image")
	}
	vs, hs := shrink, shrink
	if shrink == 0 {
		vs, hs = float64(h)/float64(oh), float64(w)/float64(ow)
	}
	if oh != h {
		var out []byte
		if len(into) >= 3*w*oh {
			out = into[:3*w*oh]
		} else {
			out = make([]byte, 3*w*oh)
		}
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
		var out []byte
		if ow > w {
			out = make([]byte, 3*ow*h)
		} else {
			out = pix[:3*ow*h]
		}
		if C.lb_reduceh((*C.uchar)(unsafe.Pointer(&pix[0])), C.int(w), C.int(h), (*C.uchar)(unsafe.Pointer(&out[0])), C.int(ow), C.double(hs)) != 0 {
			return nil, errors.New("imaging: out of memory resampling")
		}
		runtime.KeepAlive(pix)
		pix = out
	}
	return pix, nil
}
