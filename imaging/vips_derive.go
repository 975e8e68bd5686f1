//go:build cgo

package imaging

/*
#cgo pkg-config: vips
#include <stdlib.h>
#include <vips/vips.h>

// lb_jpeg encodes w×h packed 3-band 8-bit sRGB pixels, which stay the
// caller's, with the options exportJPEG gives ImageRef.ExportJpeg: the
// same file as encoding the image in libvips.
static int lb_jpeg(void *pix, int w, int h, int quality, void **buf, size_t *len, char **err) {
	VipsImage *in = vips_image_new_from_memory(pix, (size_t) w * h * 3, w, h, 3, VIPS_FORMAT_UCHAR);
	int rc = -1;
	if (in != NULL) {
		in->Type = VIPS_INTERPRETATION_sRGB;
		rc = vips_jpegsave_buffer(in, buf, len, "Q", quality, "strip", TRUE,
			"interlace", FALSE, "optimize_coding", FALSE, NULL);
		g_object_unref(in);
	}
	if (rc != 0) {
		*err = g_strdup(vips_error_buffer());
		vips_error_clear();
	}
	return rc;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// fromPreview encodes the preview from its pixels (w×h, packed 3-band
// sRGB) and derives the thumbnail and the analysis image from the same
// pixels in memory. Decoding the encoded preview again at a smaller scale
// costs more than this, and libvips' own resizes of an image in memory
// (8.14) cost several times more still.
func fromPreview(pix []byte, w, h int, opt Options, d *derived) error {
	if len(pix) < 3*w*h {
		return fmt.Errorf("imaging: libvips gave %d bytes for %d×%d sRGB", len(pix), w, h)
	}
	var err error
	if d.preview, err = encodeRGB(pix, w, h, opt.PreviewQuality); err != nil {
		return err
	}
	if d.small, err = shrinkRGB(pix, w, h, opt.ThumbSize); err != nil {
		return err
	}
	small := d.small
	if d.thumb, err = encodeRGB(appendRGB(nil, small), small.Rect.Dx(), small.Rect.Dy(), opt.ThumbQuality); err != nil {
		return err
	}
	d.mid, err = shrinkRGB(pix, w, h, analysisSize)
	return err
}

// encodeRGB encodes packed 3-band sRGB pixels as a JPEG with libvips.
func encodeRGB(pix []byte, w, h, quality int) (Output, error) {
	var buf unsafe.Pointer
	var n C.size_t
	var cerr *C.char
	rc := C.lb_jpeg(unsafe.Pointer(&pix[0]), C.int(w), C.int(h), C.int(quality), &buf, &n, &cerr)
	runtime.KeepAlive(pix)
	if rc != 0 {
		msg := C.GoString(cerr)
		C.g_free(C.gpointer(cerr))
		return Output{}, errors.New("imaging: libvips cannot encode the JPEG: " + firstLine(errors.New(strings.TrimSpace(msg))))
	}
	defer C.g_free(C.gpointer(buf))
	return Output{Data: C.GoBytes(buf, C.int(n)), ContentType: contentTypeJPEG, Width: w, Height: h}, nil
}
