//go:build cgo

package imaging

/*
#cgo CFLAGS: -O3

// The 2×2 and 3×3 box averages boxRGB uses most, from packed RGB rows w
// pixels wide into opaque RGBA rows of stride bytes, rounded to nearest.
// In Go the bounds checks made these loops twice as slow.
static void lb_box2(const unsigned char *in, int w, unsigned char *out, int ow, int oh, int stride) {
	for (int oy = 0; oy < oh; oy++) {
		const unsigned char *a = in + (size_t) 6 * w * oy, *b = a + (size_t) 3 * w;
		unsigned char *o = out + (size_t) oy * stride;
		for (int x = 0; x < ow; x++, a += 6, b += 6, o += 4) {
			o[0] = (a[0] + a[3] + b[0] + b[3] + 2) >> 2;
			o[1] = (a[1] + a[4] + b[1] + b[4] + 2) >> 2;
			o[2] = (a[2] + a[5] + b[2] + b[5] + 2) >> 2;
			o[3] = 255;
		}
	}
}

static void lb_box3(const unsigned char *in, int w, unsigned char *out, int ow, int oh, int stride) {
	for (int oy = 0; oy < oh; oy++) {
		const unsigned char *a = in + (size_t) 9 * w * oy, *b = a + (size_t) 3 * w, *c = b + (size_t) 3 * w;
		unsigned char *o = out + (size_t) oy * stride;
		for (int x = 0; x < ow; x++, a += 9, b += 9, c += 9, o += 4) {
			for (int ch = 0; ch < 3; ch++) {
				unsigned s = a[ch] + a[ch + 3] + a[ch + 6] + b[ch] + b[ch + 3] + b[ch + 6] + c[ch] + c[ch + 3] + c[ch + 6];
				o[ch] = (unsigned char) ((s + 4) / 9);
			}
			o[3] = 255;
		}
	}
}
*/
import "C"

import (
	"image"
	"runtime"
	"slices"
	"unsafe"
)

// shrinkRGB scales packed 3-band pixels (w×h) to fit a long edge of long
// (never enlarging), as opaque RGBA of the size fitSize gives. It first
// averages whole k×k boxes, by the largest k that leaves at least twice
// the target or lands on it exactly (2×2 for 2048 → 1024), and finishes
// with Lanczos3 (lanczosRGB) on what is left: what Lanczos3 all the way
// would give, at a fraction of the work.
func shrinkRGB(pix []byte, w, h, long int) (*image.RGBA, error) {
	tw, th := fitSize(w, h, long)
	n := max(w, h)
	k := 1
	if n > long {
		k = max(1, n/(2*long))
		if n%long == 0 {
			k = n / long
		}
	}
	if k == 1 && (tw != w || th != h) {
		// No boxes: Lanczos3 straight from the pixels, on a copy when
		// lanczosRGB would work in place (across only).
		src := pix
		if th == h {
			src = append([]byte(nil), pix[:3*w*h]...)
		}
		rgb, err := lanczosRGB(src, w, h, tw, th, 0)
		if err != nil {
			return nil, err
		}
		return boxRGB(rgb, tw, th, 1), nil
	}
	img := boxRGB(pix, w, h, k)
	bw, bh := img.Rect.Dx(), img.Rect.Dy()
	if bw == tw && bh == th {
		return img, nil
	}
	// Each axis by its own ratio: the boxes dropped a few edge pixels.
	rgb, err := lanczosRGB(appendRGB(nil, img), bw, bh, tw, th, 0)
	if err != nil {
		return nil, err
	}
	return boxRGB(rgb, tw, th, 1), nil
}

// appendRGB appends an opaque RGBA image's pixels to dst, packed 3-band.
func appendRGB(dst []byte, img *image.RGBA) []byte {
	dst = slices.Grow(dst, 3*len(img.Pix)/4)
	for i := 0; i < len(img.Pix); i += 4 {
		dst = append(dst, img.Pix[i], img.Pix[i+1], img.Pix[i+2])
	}
	return dst
}

// boxRGB averages k×k boxes of packed 3-band pixels into opaque RGBA,
// dropping the pixels past the last whole box. It runs on every preview
// (twice), so it adds each row into column sums in one flat pass and
// divides by multiplying with a reciprocal: a division per sample cost
// more than all the adding.
func boxRGB(pix []byte, w, h, k int) *image.RGBA {
	ow, oh := w/k, h/k
	img := image.NewRGBA(image.Rect(0, 0, ow, oh))
	if k == 1 {
		for i, j := 0, 0; j < len(img.Pix); i, j = i+3, j+4 {
			img.Pix[j], img.Pix[j+1], img.Pix[j+2], img.Pix[j+3] = pix[i], pix[i+1], pix[i+2], 255
		}
		return img
	}
	if k == 2 {
		box2(pix, w, img)
		return img
	}
	if k == 3 {
		box3(pix, w, img)
		return img
	}
	// (s+half)*inv>>48 is (s+half)/n exactly while s+half < 2⁴⁸/n, which
	// holds for boxes up to 1,023 pixels on a side.
	n := uint64(k * k)
	inv, half := (1<<48+n-1)/n, uint32(n/2)
	cols := 3 * ow * k // the bytes of a row that fall in whole boxes
	sums := make([]uint32, cols)
	for oy := range oh {
		clear(sums)
		for y := oy * k; y < (oy+1)*k; y++ {
			row, s := pix[3*w*y:][:cols], sums[:cols]
			for i, v := range row {
				s[i] += uint32(v)
			}
		}
		out := img.Pix[oy*img.Stride:][:4*ow]
		for x := range ow {
			s := sums[3*k*x:][:3*k]
			var r, g, b uint32
			for j := 0; j < len(s); j += 3 {
				r += s[j]
				g += s[j+1]
				b += s[j+2]
			}
			o := out[4*x:][:4]
			o[0] = uint8(uint64(r+half) * inv >> 48)
			o[1] = uint8(uint64(g+half) * inv >> 48)
			o[2] = uint8(uint64(b+half) * inv >> 48)
			o[3] = 255
		}
	}
	return img
}

// box2 is boxRGB for 2×2 boxes, the analysis image's usual case.
func box2(pix []byte, w int, img *image.RGBA) {
	if ow, oh := img.Rect.Dx(), img.Rect.Dy(); ow > 0 && oh > 0 {
		C.lb_box2((*C.uchar)(unsafe.Pointer(&pix[0])), C.int(w), (*C.uchar)(unsafe.Pointer(&img.Pix[0])), C.int(ow), C.int(oh), C.int(img.Stride))
		runtime.KeepAlive(pix)
	}
}

// box3 is boxRGB for 3×3 boxes, the thumbnail's usual case.
func box3(pix []byte, w int, img *image.RGBA) {
	if ow, oh := img.Rect.Dx(), img.Rect.Dy(); ow > 0 && oh > 0 {
		C.lb_box3((*C.uchar)(unsafe.Pointer(&pix[0])), C.int(w), (*C.uchar)(unsafe.Pointer(&img.Pix[0])), C.int(ow), C.int(oh), C.int(img.Stride))
		runtime.KeepAlive(pix)
	}
}
