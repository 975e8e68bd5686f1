//go:build cgo

package imaging

/*
#cgo pkg-config: libraw
#include <stdlib.h>
#include <string.h>
#include <libraw/libraw.h>

typedef struct {
	int width, height;   // the developed image, before flip
	int flip;            // dcraw flip: 3 = 180°, 5 = 90° CCW, 6 = 90° CW
	char make[64], model[64];
	long long timestamp; // when the shot was taken, as LibRaw read it; 0: not known
} lb_raw_header;

// Each function opens the buffer, works and closes it within one call, so
// LibRaw never keeps a pointer into Go memory.

// lb_data_error records damaged sensor data (a stub whose pixels were
// removed, a cut-short file) instead of printing it; LibRaw carries on and
// would return noise.
static void lb_data_error(void *flag, const char *file, const int offset) {
	*(int *)flag = 1;
}

static libraw_data_t *lb_open(const void *buf, size_t len, int *damaged, int *err) {
	libraw_data_t *lr = libraw_init(0);
	if (lr == NULL) {
		*err = LIBRAW_UNSUFFICIENT_MEMORY;
		return NULL;
	}
	libraw_set_dataerror_handler(lr, lb_data_error, damaged);
	*err = libraw_open_buffer(lr, (void *)buf, len);
	if (*err != LIBRAW_SUCCESS) {
		libraw_close(lr);
		return NULL;
	}
	return lr;
}

static int lb_raw_info(const void *buf, size_t len, lb_raw_header *info) {
	int err, damaged = 0;
	libraw_data_t *lr = lb_open(buf, len, &damaged, &err);
	if (lr == NULL) return err;
	info->width = lr->sizes.width;
	info->height = lr->sizes.height;
	info->flip = lr->sizes.flip;
	strncpy(info->make, lr->idata.make, sizeof info->make - 1);
	strncpy(info->model, lr->idata.model, sizeof info->model - 1);
	info->timestamp = (long long)lr->other.timestamp;
	libraw_close(lr);
	return 0;
}

// lb_raw_thumb returns the embedded JPEG preview; free it with
// libraw_dcraw_clear_mem.
static libraw_processed_image_t *lb_raw_thumb(const void *buf, size_t len, int *err) {
	int damaged = 0;
	libraw_data_t *lr = lb_open(buf, len, &damaged, err);
	if (lr == NULL) return NULL;
	libraw_processed_image_t *im = NULL;
	if ((*err = libraw_unpack_thumb(lr)) == LIBRAW_SUCCESS) {
		im = libraw_dcraw_make_mem_thumb(lr, err);
	}
	libraw_close(lr);
	return im;
}

// lb_raw_develop demosaics the sensor data into 8-bit sRGB, turned as the
// camera says; at half size when half is set (faster, and enough for a
// preview of a large sensor). Free the result with libraw_dcraw_clear_mem.
static libraw_processed_image_t *lb_raw_develop(const void *buf, size_t len, int half, int *err) {
	int damaged = 0;
	libraw_data_t *lr = lb_open(buf, len, &damaged, err);
	if (lr == NULL) return NULL;
	lr->params.half_size = half;
	lr->params.output_bps = 8;
	lr->params.output_color = 1; // sRGB
	lr->params.use_camera_wb = 1;
	libraw_processed_image_t *im = NULL;
	if ((*err = libraw_unpack(lr)) == LIBRAW_SUCCESS && (*err = libraw_dcraw_process(lr)) == LIBRAW_SUCCESS) {
		im = libraw_dcraw_make_mem_image(lr, err);
	}
	if (im != NULL && damaged) {
		libraw_dcraw_clear_mem(im);
		im = NULL;
		*err = LIBRAW_DATA_ERROR;
	}
	libraw_close(lr);
	return im;
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// rawInfo is what LibRaw reads from a raw's header.
type rawInfo struct {
	width, height int // displayed size: developed and turned
	flip          int
	make, model   string
	// timestamp is the capture time in seconds, the camera's wall clock
	// counted as if it were UTC (CIFF records it so), or 0.
	timestamp int64
}

func librawError(code C.int) error {
	return fmt.Errorf("LibRaw: %s", C.GoString(C.libraw_strerror(code)))
}

// librawInfo reads a raw's header with LibRaw.
func librawInfo(data []byte) (rawInfo, error) {
	var ci C.lb_raw_header
	rc := C.lb_raw_info(unsafe.Pointer(&data[0]), C.size_t(len(data)), &ci)
	runtime.KeepAlive(data)
	if rc != 0 {
		return rawInfo{}, librawError(rc)
	}
	ri := rawInfo{width: int(ci.width), height: int(ci.height), flip: int(ci.flip),
		make: C.GoString(&ci.make[0]), model: C.GoString(&ci.model[0]), timestamp: int64(ci.timestamp)}
	if ri.flip&4 != 0 {
		ri.width, ri.height = ri.height, ri.width
	}
	return ri, nil
}

// librawThumb returns a raw's embedded JPEG preview.
func librawThumb(data []byte) ([]byte, error) {
	var rc C.int
	im := C.lb_raw_thumb(unsafe.Pointer(&data[0]), C.size_t(len(data)), &rc)
	runtime.KeepAlive(data)
	if im == nil {
		return nil, librawError(rc)
	}
	defer C.libraw_dcraw_clear_mem(im)
	if im._type != C.LIBRAW_IMAGE_JPEG {
		return nil, fmt.Errorf("LibRaw: the embedded preview is not a JPEG")
	}
	return C.GoBytes(unsafe.Pointer(&im.data[0]), C.int(im.data_size)), nil
}

// librawDevelop demosaics a raw into an 8-bit sRGB image, returned as a
// binary PPM that libvips loads without another decode.
func librawDevelop(data []byte, half bool) ([]byte, error) {
	var rc C.int
	h := C.int(0)
	if half {
		h = 1
	}
	im := C.lb_raw_develop(unsafe.Pointer(&data[0]), C.size_t(len(data)), h, &rc)
	runtime.KeepAlive(data)
	if im == nil {
		return nil, librawError(rc)
	}
	defer C.libraw_dcraw_clear_mem(im)
	if im._type != C.LIBRAW_IMAGE_BITMAP || im.colors != 3 || im.bits != 8 {
		return nil, fmt.Errorf("LibRaw: unexpected developed image (%d colours, %d bits)", im.colors, im.bits)
	}
	hdr := fmt.Sprintf("P6\n%d %d\n255\n", im.width, im.height)
	out := make([]byte, len(hdr)+int(im.data_size))
	copy(out, hdr)
	copy(out[len(hdr):], unsafe.Slice((*byte)(unsafe.Pointer(&im.data[0])), int(im.data_size)))
	return out, nil
}
