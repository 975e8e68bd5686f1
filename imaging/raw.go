package imaging

import "encoding/binary"

// inspectRaw finds a raw's metadata in Go; its size and pixels come from
// LibRaw in the "vips" engine (readRawHeader).
func inspectRaw(data []byte, h *header) error {
	switch h.format {
	case CR3:
		h.exif, h.exifIFD = cr3Exif(data)
		h.xmp = cr3XMP(data)
	case RAF:
		j := walkJPEG(rafJPEG(data)) // exiftool writes a RAF's XMP there too
		h.exif, h.xmp, h.xmpExt = j.exif, j.xmp, j.xmpExt
	case CRW:
		// CIFF, not TIFF: LibRaw names the camera.
	default:
		h.exif = data // TIFF-shaped: DNG, CR2, NEF, ARW, ORF, RW2, PEF, SRW
		h.xmp = tiffXMP(data)
	}
	return nil
}

// rafJPEG returns the JPEG preview a Fujifilm RAF carries, which holds its
// EXIF: its offset and length follow the 84-byte header.
func rafJPEG(data []byte) []byte {
	if len(data) < 92 {
		return nil
	}
	off, n := uint64(binary.BigEndian.Uint32(data[84:])), uint64(binary.BigEndian.Uint32(data[88:]))
	if off > uint64(len(data)) || n > uint64(len(data))-off {
		return nil
	}
	return data[off : off+n]
}
