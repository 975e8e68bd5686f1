//go:build cgo

package imaging

/*
#cgo pkg-config: vips
#include <stdlib.h>
#include <vips/vips.h>

// lb_header opens an image without decoding its pixels (libvips loads
// lazily) and reports its size, as the decoder will deliver it: libheif and
// libjxl apply the file's own rotation.
static int lb_header(const void *buf, size_t len, int *w, int *h, char **err) {
	VipsImage *im = vips_image_new_from_buffer(buf, len, "", NULL);
	if (im == NULL) {
		*err = g_strdup(vips_error_buffer());
		vips_error_clear();
		return -1;
	}
	*w = vips_image_get_width(im);
	*h = vips_image_get_height(im);
	g_object_unref(im);
	return 0;
}
*/
import "C"

import (
	"runtime"
	"strings"
	"unsafe"
)

// readHeader reads the size of a HEIF, AVIF or JPEG XL image with libvips.
func (e *vipsEngine) readHeader(data []byte, h *header) error {
	if h.format.IsRaw() {
		return e.readRawHeader(data, h)
	}
	var w, ht C.int
	var cerr *C.char
	rc := C.lb_header(unsafe.Pointer(&data[0]), C.size_t(len(data)), &w, &ht, &cerr)
	runtime.KeepAlive(data)
	if rc != 0 {
		msg := C.GoString(cerr)
		C.g_free(C.gpointer(cerr))
		msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
		return newError(CodeCorruptImage, nil, "the %s header cannot be read: %s", formatName(h.format), msg)
	}
	h.width, h.height = int(w), int(ht)
	return nil
}
