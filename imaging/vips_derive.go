//go:build cgo

package imaging

import "fmt"

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
