//go:build cgo

package imaging

/*
#cgo pkg-config: libjpeg
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <jpeglib.h>

typedef struct {
	struct jpeg_error_mgr pub;
	jmp_buf jmp;
	char msg[JMSG_LENGTH_MAX];
} lb_jerr;

static void lb_jerr_exit(j_common_ptr c) {
	lb_jerr *e = (lb_jerr *) c->err;
	e->pub.format_message(c, e->msg);
	longjmp(e->jmp, 1);
}

// A warning means damaged data (a file cut short, a bad code): stop, as
// libvips' loads with fail do, and let the caller decide.
static void lb_jerr_message(j_common_ptr c, int level) {
	if (level < 0) lb_jerr_exit(c);
}

enum { LB_JPEG_OK = 0, LB_JPEG_PROFILE = 1, LB_JPEG_OTHER = 2, LB_JPEG_ERROR = -1 };

// lb_scale_denom is the largest of 1, 2, 4, 8 to divide a JPEG's size by
// in the DCT that leaves its long edge at least min_long (0: 1).
static unsigned int lb_scale_denom(unsigned long long_edge, int min_long) {
	unsigned int d = 1;
	while (min_long > 0 && d < 8 && long_edge / (2 * d) >= (unsigned long) min_long) d *= 2;
	return d;
}

// lb_jpeg_read decodes a JPEG whose pixels are RGB, YCbCr or grey into
// packed 8-bit RGB (*out, *w × *h), scaled in the DCT by the largest of
// 1/2, 1/4, 1/8 that leaves the long edge at least min_long (0: never).
// The pixels go to dst when its dst_cap bytes hold them (*out is dst),
// else to memory malloc'd here (free it). Unless profile_ok, a JPEG with
// an ICC profile is not decoded: the profile comes back in *icc (free it)
// for the caller to vet. Other JPEGs (CMYK, YCCK) return LB_JPEG_OTHER;
// damage returns LB_JPEG_ERROR with libjpeg's message in msg.
static int lb_jpeg_read(const unsigned char *data, size_t len, int min_long, int profile_ok,
		unsigned char *dst, size_t dst_cap,
		unsigned char **icc, unsigned int *icc_len, unsigned char **out, int *w, int *h, char *msg) {
	struct jpeg_decompress_struct c;
	lb_jerr e;
	unsigned char *volatile buf = NULL;
	c.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = lb_jerr_exit;
	e.pub.emit_message = lb_jerr_message;
	jpeg_create_decompress(&c);
	if (setjmp(e.jmp)) {
		free(buf);
		jpeg_destroy_decompress(&c);
		snprintf(msg, JMSG_LENGTH_MAX, "%s", e.msg);
		return LB_JPEG_ERROR;
	}
	jpeg_mem_src(&c, data, len);
	if (!profile_ok) jpeg_save_markers(&c, JPEG_APP0 + 2, 0xFFFF);
	jpeg_read_header(&c, TRUE);
	if (!profile_ok && jpeg_read_icc_profile(&c, icc, icc_len)) {
		jpeg_destroy_decompress(&c);
		return LB_JPEG_PROFILE;
	}
	if (c.jpeg_color_space != JCS_YCbCr && c.jpeg_color_space != JCS_RGB && c.jpeg_color_space != JCS_GRAYSCALE) {
		jpeg_destroy_decompress(&c);
		return LB_JPEG_OTHER;
	}
	c.scale_num = 1;
	c.scale_denom = lb_scale_denom(c.image_width > c.image_height ? c.image_width : c.image_height, min_long);
	c.out_color_space = JCS_RGB;
	c.dct_method = JDCT_ISLOW;
	jpeg_start_decompress(&c);
	size_t row = (size_t) c.output_width * 3;
	unsigned char *pixels = dst;
	if (dst == NULL || row * c.output_height > dst_cap) pixels = buf = malloc(row * c.output_height);
	if (pixels == NULL) {
		snprintf(e.msg, sizeof e.msg, "out of memory");
		longjmp(e.jmp, 1);
	}
	while (c.output_scanline < c.output_height) {
		JSAMPROW rows[16];
		int n = 0;
		for (; n < 16 && c.output_scanline + n < c.output_height; n++) rows[n] = pixels + (c.output_scanline + n) * row;
		jpeg_read_scanlines(&c, rows, n);
	}
	*w = c.output_width;
	*h = c.output_height;
	*out = pixels;
	jpeg_destroy_decompress(&c);
	return LB_JPEG_OK;
}

// lb_jpeg_write encodes w×h packed RGB pixels as a baseline JPEG at
// quality q with the settings libvips' jpegsave uses for it (4:2:0 below
// quality 90, 4:4:4 from 90, standard tables, Huffman tables not
// optimised, no metadata) into *out (free it).
static int lb_jpeg_write(const unsigned char *pix, int w, int h, int q, unsigned char **out, unsigned long *len, char *msg) {
	struct jpeg_compress_struct c;
	lb_jerr e;
	c.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = lb_jerr_exit;
	jpeg_create_compress(&c);
	*out = NULL;
	*len = 0;
	if (setjmp(e.jmp)) {
		jpeg_destroy_compress(&c);
		free(*out);
		*out = NULL;
		snprintf(msg, JMSG_LENGTH_MAX, "%s", e.msg);
		return LB_JPEG_ERROR;
	}
	jpeg_mem_dest(&c, out, len);
	c.image_width = w;
	c.image_height = h;
	c.input_components = 3;
	c.in_color_space = JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, q, TRUE);
	c.optimize_coding = FALSE;
	c.dct_method = JDCT_ISLOW;
	if (q >= 90) {
		c.comp_info[0].h_samp_factor = 1;
		c.comp_info[0].v_samp_factor = 1;
	}
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		JSAMPROW rows[16];
		int n = 0;
		for (; n < 16 && c.next_scanline + n < c.image_height; n++) rows[n] = (JSAMPROW) pix + (size_t) (c.next_scanline + n) * w * 3;
		jpeg_write_scanlines(&c, rows, n);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	return LB_JPEG_OK;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// jpegPreview makes the preview's pixels of a JPEG with libjpeg-turbo
// itself rather than through libvips, for the JPEGs libvips would only
// decode and resize: RGB, YCbCr or grey, with no colour profile or an sRGB
// one, under four times the preview. It scales in the DCT where the photo
// is at least twice the preview (a decode at half size), finishes with
// lanczosRGB and applies the EXIF orientation. The pixels may be kept
// memory (decodeBuffers): they are valid until release is called, which
// the caller must do. ok is false, with nothing done, for any other JPEG,
// and when libjpeg-turbo meets damage: libvips then decodes it, and
// decides what damage means, as before.
//
// Through libvips the same pixels cost a third more: its pipeline hands
// the rows between threads, copies them out twice, and shrinks in height
// on its own (vips_thumbnail 8.14 never scales in the DCT under 4×).
func jpegPreview(src []byte, hd header, orientation int, opt Options) (pix []byte, w, h int, release func(), ok bool) {
	// From four times the preview on, libvips' thumbnail shrinks on load
	// and rounds the size from the shrunk image: leave those to it, so
	// every preview is the size libvips gives.
	if max(hd.width, hd.height) >= 4*opt.PreviewSize {
		return nil, 0, 0, nil, false
	}
	return jpegScaled(src, hd, orientation, opt.PreviewSize)
}

// jpegScaled decodes a plain JPEG (as jpegPreview) with libjpeg-turbo,
// scaled in the DCT by the largest of 1/2, 1/4, 1/8 that leaves a long edge
// of at least long, and resizes it to fit long with Lanczos3, upright. The
// pixels stay in the memory they were decoded and resized in, kept for the
// next decode once release is called: a 12 MP photo's preview pass
// otherwise had Go allocate and zero 18 MB.
func jpegScaled(src []byte, hd header, orientation, long int) (pix []byte, w, h int, release func(), ok bool) {
	var (
		icc     *C.uchar
		iccLen  C.uint
		out     *C.uchar
		cw, ch  C.int
		msg     [C.JMSG_LENGTH_MAX]C.char
		checked C.int
	)
	if len(src) == 0 {
		return nil, 0, 0, nil, false
	}
	buf := decodeBuffers.get(scaledSize(hd.width, hd.height, long))
	bufs := []cBuffer{buf}
	release = func() {
		for _, b := range bufs {
			decodeBuffers.put(b)
		}
	}
	dst := (*C.uchar)(buf.p)
	for {
		rc := C.lb_jpeg_read((*C.uchar)(unsafe.Pointer(&src[0])), C.size_t(len(src)), C.int(long), checked,
			dst, C.size_t(buf.n), &icc, &iccLen, &out, &cw, &ch, &msg[0])
		runtime.KeepAlive(src)
		if rc == C.LB_JPEG_PROFILE {
			srgb := isSRGBProfile(C.GoBytes(unsafe.Pointer(icc), C.int(iccLen)))
			C.free(unsafe.Pointer(icc))
			if !srgb {
				release()
				return nil, 0, 0, nil, false
			}
			checked = 1
			continue
		}
		if rc != C.LB_JPEG_OK {
			release()
			return nil, 0, 0, nil, false
		}
		break
	}
	dw, dh := int(cw), int(ch)
	if out != dst {
		// Memory lb_jpeg_read allocated: kept or freed as the rest.
		bufs = append(bufs, cBuffer{p: unsafe.Pointer(out), n: 3 * dw * dh})
	}
	decoded := unsafe.Slice((*byte)(unsafe.Pointer(out)), 3*dw*dh)
	pix, w, h, err := fitRGB(decoded, dw, dh, hd.width, hd.height, long, func(n int) []byte {
		b := decodeBuffers.get(n)
		if b.p == nil {
			return nil
		}
		bufs = append(bufs, b)
		return unsafe.Slice((*byte)(b.p), b.n)
	})
	if err != nil {
		release()
		return nil, 0, 0, nil, false
	}
	if orientation > 1 && orientation <= 8 {
		img := orient(boxRGB(pix, w, h, 1), orientation)
		w, h = img.Rect.Dx(), img.Rect.Dy()
		pix = appendRGB(nil, img)
	}
	return pix, w, h, release, true
}

// decodeBuffers keeps the memory jpegScaled decodes and resizes into for
// the next decode. A 12 MP photo's pixels are 36 MB, above what glibc
// serves from its heap: malloc mapped them afresh for every photo, and
// the kernel faulted in and zeroed them page by page, a fifth of the
// preview's time. The buffers are C memory, out of the Go heap's sight,
// so they do not raise the garbage collector's goal. Each decode holds
// two (the decoded pixels and the resized ones, 36 and 18 MB for 12 MP)
// and the worker runs twice the cores by default, so four times the
// cores are kept, none over 64 MB, and all are freed 30 s after the last
// decode: a 2-core worker that ingested a batch of 12 MP photos holds
// 216 MB more until then.
var decodeBuffers = cBuffers{keep: 4 * runtime.GOMAXPROCS(0), largest: 64 << 20, idle: 30 * time.Second}

// cBuffers is a small free list of malloc'd buffers.
type cBuffers struct {
	keep    int           // buffers kept at most; a worker decodes about this many at once
	largest int           // the largest buffer kept: a 21 MP photo's pixels
	idle    time.Duration // how long kept buffers outlast the last decode
	mu      sync.Mutex
	free    []cBuffer
	release *time.Timer // frees every kept buffer once idle has passed
}

type cBuffer struct {
	p unsafe.Pointer
	n int
}

// cBufferMin is the smallest buffer worth keeping: malloc serves less
// from its heap without mapping fresh memory.
const cBufferMin = 1 << 20

// get returns a buffer of at least n bytes, of unspecified content: a kept
// one no more than twice as large, or a new one. Under cBufferMin, and
// when malloc fails, it returns none, and the caller allocates its own.
func (cb *cBuffers) get(n int) cBuffer {
	if n < cBufferMin {
		return cBuffer{}
	}
	cb.mu.Lock()
	for i, b := range cb.free {
		if b.n >= n && b.n <= 2*n {
			cb.free = append(cb.free[:i], cb.free[i+1:]...)
			cb.mu.Unlock()
			return b
		}
	}
	cb.mu.Unlock()
	p := C.malloc(C.size_t(n))
	if p == nil {
		return cBuffer{}
	}
	return cBuffer{p: p, n: n}
}

// put keeps b for a later get, or frees it: when it is under cBufferMin
// or over largest, or (the smallest kept one instead, when that is
// smaller) once keep are kept.
func (cb *cBuffers) put(b cBuffer) {
	if b.p == nil {
		return
	}
	if b.n > cb.largest || b.n < cBufferMin {
		C.free(b.p)
		return
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.release == nil {
		cb.release = time.AfterFunc(cb.idle, cb.freeAll)
	} else {
		cb.release.Reset(cb.idle)
	}
	if len(cb.free) < cb.keep {
		cb.free = append(cb.free, b)
		return
	}
	small := 0
	for i, f := range cb.free {
		if f.n < cb.free[small].n {
			small = i
		}
	}
	if cb.free[small].n < b.n {
		b, cb.free[small] = cb.free[small], b
	}
	C.free(b.p)
}

// freeAll frees every kept buffer: a worker with nothing to decode gives
// the memory back.
func (cb *cBuffers) freeAll() {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	for _, b := range cb.free {
		C.free(b.p)
	}
	cb.free = nil
}

// scaledSize is the size in bytes of a w×h JPEG's RGB pixels decoded as
// lb_jpeg_read scales it for a long edge of at least long.
func scaledSize(w, h, long int) int {
	d := int(C.lb_scale_denom(C.ulong(max(w, h)), C.int(long)))
	return 3 * ((w + d - 1) / d) * ((h + d - 1) / d)
}

// fitRGB resizes w×h packed RGB pixels, decoded from a fullW×fullH image
// (at a scale), with Lanczos3 to the size libvips' thumbnail makes of the
// full image for a box of long on each side (never enlarging). The result
// may be pix itself, resized in place, or memory from scratch(n), which
// gives at least n bytes, or nil to have Go memory made.
func fitRGB(pix []byte, w, h, fullW, fullH, long int, scratch func(n int) []byte) ([]byte, int, int, error) {
	if max(fullW, fullH) <= long {
		return pix, w, h, nil
	}
	// Both axes by the long one's ratio, as libvips' thumbnail shrinks,
	// less the DCT's own scaling.
	fw, fh, shrink := vipsFit(fullW, fullH, long)
	shrink *= float64(w) / float64(fullW)
	var into []byte
	if fh != h {
		into = scratch(3 * w * fh)
	}
	out, err := lanczosRGBInto(into, pix, w, h, fw, fh, shrink)
	if err != nil {
		return nil, 0, 0, errors.New("imaging: " + err.Error())
	}
	return out, fw, fh, nil
}

// encodeRGB encodes packed 3-band sRGB pixels as a JPEG with libjpeg-turbo,
// with the settings libvips' jpegsave uses (lb_jpeg_write): the same file,
// without libvips' pipeline around the encoder, which added a quarter to
// the preview's encode.
func encodeRGB(pix []byte, w, h, quality int) (Output, error) {
	if w <= 0 || h <= 0 || len(pix) < 3*w*h {
		return Output{}, fmt.Errorf("imaging: %d bytes cannot hold %d×%d sRGB", len(pix), w, h)
	}
	var (
		out *C.uchar
		n   C.ulong
		msg [C.JMSG_LENGTH_MAX]C.char
	)
	rc := C.lb_jpeg_write((*C.uchar)(unsafe.Pointer(&pix[0])), C.int(w), C.int(h), C.int(quality), &out, &n, &msg[0])
	runtime.KeepAlive(pix)
	if rc != C.LB_JPEG_OK {
		return Output{}, errors.New("imaging: libjpeg cannot encode the JPEG: " + C.GoString(&msg[0]))
	}
	defer C.free(unsafe.Pointer(out))
	return Output{Data: C.GoBytes(unsafe.Pointer(out), C.int(n)), ContentType: contentTypeJPEG, Width: w, Height: h}, nil
}
