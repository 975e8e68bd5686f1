package imaging

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"

	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"

	"lightbox/imaging/formats"
)

// header is what inspect learns without decoding pixels.
type header struct {
	format        Format
	width, height int       // as stored, before orientation
	exif          []byte    // raw EXIF block (TIFF data, maybe after "Exif\0\0"), or nil
	exifIFD       []byte    // a separate TIFF block holding the Exif directory (CR3), or nil
	xmp           []byte    // an XMP packet, or nil
	xmpExt        [][]byte  // a JPEG's extended XMP segments, after their prefix
	meta          *Metadata // what the container itself says, before EXIF (CRW), or nil
	rawJPEG       []byte    // a raw's largest embedded JPEG, or nil
	rawJPEGSize   [2]int    // its width and height, oriented
	rawTurn       int       // the orientation (1-8) the raw's camera recorded
	hdrPrimaries  int       // colour primaries of a PQ or HLG image (H.273)
	hdrTransfer   int       // transferPQ or transferHLG, or 0 for SDR
}

// inspect runs every check that needs no pixel decoding: size, format,
// the pixel count declared in the header and, for progressive JPEGs,
// whether all scans are there. Formats Go cannot decode (HEIF, AVIF, JPEG
// XL, raws) get their size from the engine's header reader in inspectFor.
func inspect(data []byte, cfg Config) (header, error) {
	var h header
	if len(data) == 0 {
		return h, newError(CodeEmptyFile, nil, "the file is empty")
	}
	if int64(len(data)) > cfg.MaxBytes {
		return h, newError(CodeTooLarge, nil, "the file has %d bytes, more than the limit of %d", len(data), cfg.MaxBytes)
	}
	f := formats.Sniff(data)
	if f == "" {
		return h, newError(CodeUnsupportedFormat, nil, "the file is not an image in a format Lightbox reads: %s", formats.Names)
	}
	h.format = f
	switch {
	case f == HEIF || f == AVIF:
		h.exif, h.xmp = heifMetadata(data)
		h.hdrPrimaries, h.hdrTransfer = heifHDR(data)
		return h, nil
	case f == JXL:
		h.exif = jxlExif(data)
		return h, nil
	case !goDecodes(f):
		return h, inspectRaw(data, &h)
	}
	c, err := decodeConfig(f, data)
	if err != nil {
		return h, newError(CodeCorruptImage, err, "the %s header cannot be read", f)
	}
	h.width, h.height = c.Width, c.Height
	if err := checkPixels(h, cfg); err != nil {
		return h, err
	}
	switch f {
	case JPEG:
		j := walkJPEG(data)
		if j.progressive && !j.complete {
			return h, newError(CodeCorruptImage, nil, "the progressive JPEG is cut short: some of its scans are missing")
		}
		h.exif, h.xmp, h.xmpExt = j.exif, j.xmp, j.xmpExt
	case PNG:
		h.exif = pngExif(data)
	case WebP:
		h.exif = webpExif(data)
	case TIFF:
		h.exif, h.xmp = data, tiffXMP(data)
	}
	return h, nil
}

// checkPixels refuses an empty image or one of more than cfg.MaxPixels.
func checkPixels(h header, cfg Config) error {
	if h.width <= 0 || h.height <= 0 {
		return newError(CodeCorruptImage, nil, "the %s header declares an empty image (%d×%d)", h.format, h.width, h.height)
	}
	if px := int64(h.width) * int64(h.height); px > cfg.MaxPixels {
		return newError(CodeTooManyPixels, nil, "the image is %d×%d, %.1f megapixels, more than the limit of %.1f",
			h.width, h.height, float64(px)/1e6, float64(cfg.MaxPixels)/1e6)
	}
	return nil
}

// goDecodes reports whether Go's own decoders read f.
func goDecodes(f Format) bool {
	switch f {
	case JPEG, PNG, GIF, WebP, TIFF:
		return true
	}
	return false
}

// headerReader is an engine that reads the size of the formats Go cannot
// decode from their headers, without decoding pixels.
type headerReader interface {
	readHeader(data []byte, h *header) error
}

// inspectFor is inspect for engine e: a format e cannot decode is refused
// with CodeUnsupportedFormat, and one whose size only e can read gets it,
// and the pixel limit, before any decoding.
func inspectFor(data []byte, cfg Config, e any) (header, error) {
	h, err := inspect(data, cfg)
	if err != nil || goDecodes(h.format) {
		return h, err
	}
	r, ok := e.(headerReader)
	if !ok {
		return h, newError(CodeUnsupportedFormat, nil,
			"this server decodes images with its pure Go engine, which cannot read %s; the libvips engine (a build with cgo) reads it", formatName(h.format))
	}
	if err := r.readHeader(data, &h); err != nil {
		return h, err
	}
	return h, checkPixels(h, cfg)
}

// formatName is a format's name for people.
func formatName(f Format) string {
	switch f {
	case HEIF:
		return "HEIC/HEIF"
	case JXL:
		return "JPEG XL"
	}
	if f.IsRaw() {
		return "camera raw (" + strings.ToUpper(string(f)) + ")"
	}
	return strings.ToUpper(string(f))
}

func decodeConfig(f Format, data []byte) (image.Config, error) {
	r := bytes.NewReader(data)
	switch f {
	case JPEG:
		return jpeg.DecodeConfig(r)
	case PNG:
		return png.DecodeConfig(r)
	case GIF:
		return gif.DecodeConfig(r)
	case WebP:
		return webp.DecodeConfig(r)
	default:
		return tiff.DecodeConfig(r)
	}
}

type jpegInfo struct {
	exif        []byte
	xmp         []byte   // the XMP packet, without its namespace prefix
	xmpExt      [][]byte // extended XMP segments, without their prefix
	progressive bool
	complete    bool // a progressive JPEG's scans cover every coefficient at full precision
}

// walkJPEG reads the marker segments of a JPEG. For a baseline JPEG it stops
// at the first scan. For a progressive one it follows every scan and records
// which DCT coefficients reach full precision, because Go's decoder accepts
// a progressive JPEG whose later scans are missing and returns a blurred
// image; an encoder always finishes every coefficient, so a gap means the
// file was cut short.
func walkJPEG(data []byte) jpegInfo {
	var (
		info  jpegInfo
		comps = map[byte]*coverage{}
	)
	i := 2
	for i+4 <= len(data) {
		if data[i] != 0xFF {
			break
		}
		m := data[i+1]
		switch {
		case m == 0xFF: // fill byte
			i++
			continue
		case m == 0x01 || m == 0xD8 || (m >= 0xD0 && m <= 0xD7): // no length
			i += 2
			continue
		case m == 0xD9: // EOI
			info.complete = info.progressive && allCovered(comps)
			return info
		}
		n := int(binary.BigEndian.Uint16(data[i+2:]))
		if n < 2 || i+2+n > len(data) {
			break
		}
		seg := data[i+4 : i+2+n]
		i += 2 + n
		switch {
		case m == 0xE1 && info.exif == nil && bytes.HasPrefix(seg, []byte("Exif\x00\x00")):
			info.exif = seg
		case m == 0xE1 && info.xmp == nil && bytes.HasPrefix(seg, xmpPrefix):
			info.xmp = seg[len(xmpPrefix):]
		case m == 0xE1 && bytes.HasPrefix(seg, xmpExtPrefix):
			info.xmpExt = append(info.xmpExt, seg[len(xmpExtPrefix):])
		case m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE: // progressive SOF
			info.progressive = true
			if len(seg) >= 6 {
				for k := 0; k < int(seg[5]) && 6+3*k < len(seg); k++ {
					comps[seg[6+3*k]] = &coverage{}
				}
			}
		case m == 0xDA: // SOS
			if !info.progressive {
				return info
			}
			recordScan(seg, comps)
			i = skipEntropyData(data, i)
		}
	}
	info.complete = info.progressive && allCovered(comps)
	return info
}

type coverage struct {
	dc bool
	ac [64]bool
}

func recordScan(seg []byte, comps map[byte]*coverage) {
	if len(seg) < 1 {
		return
	}
	ns := int(seg[0])
	if len(seg) < 1+2*ns+3 {
		return
	}
	ss, se, al := int(seg[1+2*ns]), int(seg[2+2*ns]), seg[3+2*ns]&0x0F
	if al != 0 || se > 63 || ss > se {
		return // not final precision yet
	}
	for k := 0; k < ns; k++ {
		c := comps[seg[1+2*k]]
		if c == nil {
			continue
		}
		for z := ss; z <= se; z++ {
			if z == 0 {
				c.dc = true
			} else {
				c.ac[z] = true
			}
		}
	}
}

func allCovered(comps map[byte]*coverage) bool {
	if len(comps) == 0 {
		return false
	}
	for _, c := range comps {
		if !c.dc {
			return false
		}
		for z := 1; z < 64; z++ {
			if !c.ac[z] {
				return false
			}
		}
	}
	return true
}

// skipEntropyData returns the offset of the first marker after the
// entropy-coded data starting at i (stuffed 0xFF00 and restart markers are
// part of the data).
func skipEntropyData(data []byte, i int) int {
	for {
		k := bytes.IndexByte(data[i:], 0xFF)
		if k < 0 || i+k+1 >= len(data) {
			return len(data)
		}
		i += k
		b := data[i+1]
		if b == 0x00 || b == 0xFF || (b >= 0xD0 && b <= 0xD7) {
			i++
			continue
		}
		return i
	}
}

// pngExif returns the payload of the eXIf chunk, if any.
func pngExif(data []byte) []byte {
	for i := 8; i+12 <= len(data); {
		n := int(binary.BigEndian.Uint32(data[i:]))
		typ := string(data[i+4 : i+8])
		if n < 0 || n > len(data)-i-12 {
			return nil
		}
		if typ == "eXIf" {
			return data[i+8 : i+8+n]
		}
		if typ == "IEND" {
			return nil
		}
		i += 12 + n
	}
	return nil
}

// webpExif returns the payload of the EXIF chunk of an extended WebP.
func webpExif(data []byte) []byte {
	for i := 12; i+8 <= len(data); {
		n := int(binary.LittleEndian.Uint32(data[i+4:]))
		if n < 0 || n > len(data)-i-8 {
			return nil
		}
		if string(data[i:i+4]) == "EXIF" {
			return data[i+8 : i+8+n]
		}
		i += 8 + n + n&1
	}
	return nil
}
