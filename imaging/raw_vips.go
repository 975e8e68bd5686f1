//go:build cgo

package imaging

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"time"

	"github.com/davidbyttow/govips/v2/vips"
)

// readRawHeader reads a raw's size with LibRaw (the developed size, turned
// as the camera was held) and keeps its embedded JPEG for rawSource.
func (e *vipsEngine) readRawHeader(data []byte, h *header) error {
	ri, err := librawInfo(data)
	if err != nil {
		return newError(CodeCorruptImage, nil, "the %s file cannot be read: %v", formatName(h.format), err)
	}
	if h.exif == nil && h.meta == nil {
		h.meta = &Metadata{CameraMake: ri.make, CameraModel: ri.model, Orientation: 1}
		if ri.timestamp > 0 {
			// The camera's wall clock, as EXIF's DateTimeOriginal holds it:
			// a RAW+JPEG pair is matched on it.
			h.meta.CapturedAt = time.Unix(ri.timestamp, 0).UTC().Format("2006-01-02T15:04:05")
		}
	}
	h.width, h.height = ri.width, ri.height
	h.rawTurn = flipOrientation(ri.flip)
	jpg, err := librawThumb(data)
	if err != nil {
		return nil // no embedded JPEG: the sensor data it is
	}
	c, err := jpeg.DecodeConfig(bytes.NewReader(jpg))
	if err != nil {
		return nil
	}
	h.rawJPEG, h.rawJPEGSize = jpg, [2]int{c.Width, c.Height}
	if h.rawTurn >= 5 {
		h.rawJPEGSize = [2]int{c.Height, c.Width}
	}
	return nil
}

// flipOrientation turns LibRaw's flip into an EXIF orientation.
func flipOrientation(flip int) int {
	switch flip {
	case 3:
		return 3
	case 5:
		return 8
	case 6:
		return 6
	}
	return 1
}

// rawPlan is how a raw's pixels are got for an output of a given size.
type rawPlan int

const (
	rawEmbedded    rawPlan = iota // the embedded JPEG, which covers the output
	rawDevelopHalf                // LibRaw at half size, which still covers it
	rawDevelopFull                // LibRaw at full size
)

// planRaw chooses for a raw whose sensor data develops to w×h and whose
// largest embedded JPEG has a long edge of jpegLong (0 for none) when the
// output's long edge is long: the JPEG when it reaches long (cameras write
// one at full size, and it decodes in a fraction of the time), else
// LibRaw, at half size only when half still reaches long, so the output is
// never smaller than the sensor allows.
func planRaw(w, h, jpegLong, long int) rawPlan {
	switch {
	case jpegLong > 0 && jpegLong >= long:
		return rawEmbedded
	case max(w, h)/2 >= long:
		return rawDevelopHalf
	}
	return rawDevelopFull
}

// rawSource returns the bytes libvips decodes for a raw, the orientation
// still to apply to them and their full size, as planRaw chooses: the
// embedded JPEG, or the sensor data developed by LibRaw (turned already).
func rawSource(data []byte, h header, opt Options) (src []byte, turn, width, height int, err error) {
	jw, jh := h.rawJPEGSize[0], h.rawJPEGSize[1]
	if h.rawJPEG == nil {
		jw, jh = 0, 0
	}
	plan := planRaw(h.width, h.height, max(jw, jh), opt.PreviewSize)
	if plan == rawEmbedded {
		turn = h.rawTurn
		var own Metadata
		if j := walkJPEG(h.rawJPEG); j.exif != nil {
			parseExif(&own, j.exif, nil)
		}
		if own.Orientation > 1 {
			turn = 1 // libvips applies the JPEG's own orientation
		}
		return h.rawJPEG, turn, jw, jh, nil
	}
	// Even lossy-compressed sensor data takes more than a bit per pixel; a
	// smaller file (a header whose data was cut off or removed) would make
	// LibRaw develop whatever memory it holds.
	if px := int64(h.width) * int64(h.height); int64(len(data))*8 < px {
		return nil, 1, 0, 0, newError(CodeCorruptImage, nil, "the %s file holds no picture: %d bytes cannot hold the sensor data of %d×%d pixels",
			formatName(h.format), len(data), h.width, h.height)
	}
	ppm, err := librawDevelop(data, plan == rawDevelopHalf)
	if err == nil && plan == rawDevelopHalf {
		// LibRaw's half size is not always half of the size it reports
		// (sensors it turns or stretches while developing): a half that
		// falls short of the output is developed again in full.
		if pw, ph, ok := ppmSize(ppm); !ok || max(pw, ph) < opt.PreviewSize {
			ppm, err = librawDevelop(data, false)
		}
	}
	if err != nil {
		return nil, 1, 0, 0, newError(CodeCorruptImage, nil, "the sensor data of the %s file cannot be developed: %v", formatName(h.format), err)
	}
	if uniform(ppm) {
		return nil, 1, 0, 0, newError(CodeCorruptImage, nil, "the %s file holds no picture: its sensor data is empty", formatName(h.format))
	}
	return ppm, 1, h.width, h.height, nil
}

// ppmSize reads the width and height of a binary PPM that librawDevelop
// wrote.
func ppmSize(ppm []byte) (w, h int, ok bool) {
	_, err := fmt.Sscanf(string(ppm[:min(len(ppm), 32)]), "P6\n%d %d\n", &w, &h)
	return w, h, err == nil
}

// uniform reports whether a PPM's samples, after its three header lines,
// are all the same byte: a raw whose sensor data was removed develops to
// one flat colour.
func uniform(ppm []byte) bool {
	b := ppm
	for range 3 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return true
		}
		b = b[i+1:]
	}
	for _, c := range b {
		if c != b[0] {
			return false
		}
	}
	return true
}

// turnVips applies an orientation a decoder did not (a raw's camera
// orientation on its embedded JPEG), closing ref when it makes a new image.
func turnVips(ref *vips.ImageRef, o int) (*vips.ImageRef, error) {
	if o <= 1 || o > 8 {
		return ref, nil
	}
	return rewritePixels(ref, func(img *image.RGBA) *image.RGBA { return orient(img, o) })
}
