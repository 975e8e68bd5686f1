//go:build cgo

package imaging

/*
#cgo pkg-config: vips
#include <stdlib.h>
#include <vips/vips.h>

// lb_header opens an image without decoding its pixels (libvips loads
// lazily) and reports its size, as the decoder will deliver it: libheif and
// libjxl apply the file's own rotation.
// swap says whether its orientation turns it a quarter, as libvips will
// apply it.
static int lb_header(const void *buf, size_t len, int *w, int *h, int *swap, char **err) {
	VipsImage *im = vips_image_new_from_buffer(buf, len, "", NULL);
	if (im == NULL) {
		*err = g_strdup(vips_error_buffer());
		vips_error_clear();
		return -1;
	}
	*w = vips_image_get_width(im);
	*h = vips_image_get_height(im);
	*swap = vips_image_get_orientation_swap(im);
	g_object_unref(im);
	return 0;
}
*/
import "C"

import (
	"errors"
	"runtime"
	"strings"
	"unsafe"
)

// readHeader reads the size of a HEIF, AVIF or JPEG XL image with libvips.
func (e *vipsEngine) readHeader(data []byte, h *header) error {
	if h.format.IsRaw() {
		return e.readRawHeader(data, h)
	}
	w, ht, _, err := vipsGeometry(data)
	if err != nil {
		return newError(CodeCorruptImage, nil, "the %s header cannot be read: %s", formatName(h.format), err)
	}
	h.width, h.height = w, ht
	return nil
}

// vipsGeometry reads an image's stored size, and whether libvips will turn
// it a quarter to apply its orientation, from its header alone.
func vipsGeometry(data []byte) (w, h int, swap bool, err error) {
	var cw, ch, cswap C.int
	var cerr *C.char
	rc := C.lb_header(unsafe.Pointer(&data[0]), C.size_t(len(data)), &cw, &ch, &cswap, &cerr)
	runtime.KeepAlive(data)
	if rc != 0 {
		msg := C.GoString(cerr)
		C.g_free(C.gpointer(cerr))
		msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
		return 0, 0, false, errors.New(msg)
	}
	return int(cw), int(ch), cswap != 0, nil
}
