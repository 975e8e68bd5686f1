package imaging

import (
	"image"

	"github.com/nfnt/resize"
)

// shrinkRGB scales packed 3-band pixels (w×h) to fit a long edge of long
// (never enlarging), as opaque RGBA of the size fitSize gives. It first
// averages whole k×k boxes, by the largest k that leaves at least twice
// the target or lands on it exactly (2×2 for 2048 → 1024), and finishes
// with Lanczos3 on what is left: what Lanczos3 all the way would give, at
// a fraction of the work.
func shrinkRGB(pix []byte, w, h, long int) *image.RGBA {
	tw, th := fitSize(w, h, long)
	n := max(w, h)
	k := 1
	if n > long {
		k = max(1, n/(2*long))
		if n%long == 0 {
			k = n / long
		}
	}
	img := boxRGB(pix, w, h, k)
	if img.Rect.Dx() == tw && img.Rect.Dy() == th {
		return img
	}
	return resize.Resize(uint(tw), uint(th), img, resize.Lanczos3).(*image.RGBA)
}

// boxRGB averages k×k boxes of packed 3-band pixels into opaque RGBA,
// dropping the pixels past the last whole box.
func boxRGB(pix []byte, w, h, k int) *image.RGBA {
	ow, oh := w/k, h/k
	img := image.NewRGBA(image.Rect(0, 0, ow, oh))
	if k == 1 {
		for i, j := 0, 0; j < len(img.Pix); i, j = i+3, j+4 {
			img.Pix[j], img.Pix[j+1], img.Pix[j+2], img.Pix[j+3] = pix[i], pix[i+1], pix[i+2], 255
		}
		return img
	}
	sums := make([]uint32, 3*ow)
	n, half := uint32(k*k), uint32(k*k)/2
	for oy := range oh {
		clear(sums)
		for y := oy * k; y < (oy+1)*k; y++ {
			row := pix[3*w*y : 3*w*y+3*ow*k]
			i := 0
			for x := 0; x < ow; x++ {
				var r, g, b uint32
				for range k {
					p := row[i : i+3 : i+3]
					r += uint32(p[0])
					g += uint32(p[1])
					b += uint32(p[2])
					i += 3
				}
				s := sums[3*x : 3*x+3 : 3*x+3]
				s[0] += r
				s[1] += g
				s[2] += b
			}
		}
		out := img.Pix[oy*img.Stride : oy*img.Stride+4*ow]
		for x := 0; x < ow; x++ {
			s, o := sums[3*x:3*x+3:3*x+3], out[4*x:4*x+4:4*x+4]
			o[0] = uint8((s[0] + half) / n)
			o[1] = uint8((s[1] + half) / n)
			o[2] = uint8((s[2] + half) / n)
			o[3] = 255
		}
	}
	return img
}
