package imaging

import (
	"bytes"
	"encoding/binary"

	"lightbox/xmp"
)

// The EXIF and XMP of ISO base media files: HEIF and AVIF keep each as an
// item of the meta box, JPEG XL EXIF as an "Exif" box, CR3 EXIF as CMT
// boxes in a Canon uuid box and XMP in a uuid box of its own.
// Every read is checked against the bytes there are; nothing loops.

// eachBox calls fn with the type and payload of each box in b, until fn
// returns false or a box is malformed.
func eachBox(b []byte, fn func(typ string, payload []byte) bool) {
	for len(b) >= 8 {
		size, hdr := uint64(binary.BigEndian.Uint32(b)), uint64(8)
		switch size {
		case 0:
			size = uint64(len(b))
		case 1:
			if len(b) < 16 {
				return
			}
			size, hdr = binary.BigEndian.Uint64(b[8:]), 16
		}
		if size < hdr || size > uint64(len(b)) {
			return
		}
		if !fn(string(b[4:8]), b[hdr:size]) {
			return
		}
		b = b[size:]
	}
}

// findBox returns the payload of the first box of type typ in b, or nil.
func findBox(b []byte, typ string) []byte {
	var out []byte
	eachBox(b, func(t string, p []byte) bool {
		if t == typ {
			out = p
			return false
		}
		return true
	})
	return out
}

// exifPayload strips the 4-byte offset to the TIFF header that HEIF and
// JPEG XL put before an EXIF block.
func exifPayload(p []byte) []byte {
	if len(p) < 4 {
		return nil
	}
	off := uint64(binary.BigEndian.Uint32(p))
	if 4+off >= uint64(len(p)) {
		return nil
	}
	return p[4+off:]
}

// jxlExif returns the EXIF block of a JPEG XL container, or nil.
func jxlExif(data []byte) []byte {
	return exifPayload(findBox(data, "Exif"))
}

// uuidBox returns the payload, after the UUID, of the first uuid box in b
// named id, or nil.
func uuidBox(b, id []byte) []byte {
	var out []byte
	eachBox(b, func(t string, p []byte) bool {
		if t == "uuid" && bytes.HasPrefix(p, id) {
			out = p[len(id):]
			return false
		}
		return true
	})
	return out
}

// canonUUID names the box of a CR3 that holds its metadata.
var canonUUID = []byte{0x85, 0xc0, 0xb6, 0x87, 0x82, 0x0f, 0x11, 0xe0, 0x81, 0x11, 0xf4, 0xce, 0x46, 0x2b, 0x6a, 0x48}

// xmpUUID names the uuid box that holds an XMP packet in ISO base media
// files: CR3 (beside moov, where Canon and exiftool write it), MP4 and MOV.
var xmpUUID = []byte{0xbe, 0x7a, 0xcf, 0xcb, 0x97, 0xa9, 0x42, 0xe8, 0x9c, 0x71, 0x99, 0x94, 0x91, 0xe3, 0xaf, 0xac}

// cr3Exif returns a CR3's IFD0 (CMT1) and Exif directory (CMT2), each a
// TIFF block of its own.
func cr3Exif(data []byte) (ifd0, exifIFD []byte) {
	c := uuidBox(findBox(data, "moov"), canonUUID)
	return findBox(c, "CMT1"), findBox(c, "CMT2")
}

// cr3XMP returns a CR3's XMP packet, or nil. Canon and exiftool put its box
// at the top level; some writers put it inside moov.
func cr3XMP(data []byte) []byte {
	if p := uuidBox(data, xmpUUID); p != nil {
		return p
	}
	return uuidBox(findBox(data, "moov"), xmpUUID)
}

// heifMetadata returns the EXIF block and the XMP packet of a HEIF or AVIF
// file: the items of the meta box of type "Exif" and of type "mime" with
// content type application/rdf+xml, located by iloc.
func heifMetadata(data []byte) (exif, packet []byte) {
	meta := findBox(data, "meta")
	if len(meta) < 4 {
		return nil, nil
	}
	meta = meta[4:] // a full box: version and flags
	iinf, iloc := findBox(meta, "iinf"), findBox(meta, "iloc")
	if id, ok := heifItem(iinf, isExifItem); ok {
		exif = exifPayload(itemData(data, iloc, id, len(data)))
	}
	if id, ok := heifItem(iinf, isXMPItem); ok {
		packet = itemData(data, iloc, id, xmp.MaxPacket)
	}
	return exif, packet
}

func isExifItem(typ string, _ []byte) bool { return typ == "Exif" }

// isXMPItem matches a mime item of content type application/rdf+xml
// stored as is; a content encoding (deflate) is not read.
func isXMPItem(typ string, rest []byte) bool {
	if typ != "mime" {
		return false
	}
	fields := bytes.SplitN(rest, []byte{0}, 4) // name, content type, encoding
	return len(fields) >= 3 && string(fields[1]) == "application/rdf+xml" && (len(fields) == 3 || len(fields[2]) == 0)
}

// heifItem finds the id of the first item in an iinf box that match
// accepts, given the item's type and the bytes of its entry after the type
// (its name, then for a mime item its content type and encoding, each
// NUL-terminated).
func heifItem(iinf []byte, match func(typ string, rest []byte) bool) (uint32, bool) {
	if len(iinf) < 6 {
		return 0, false
	}
	skip := 6 // version, flags, a 16-bit count
	if iinf[0] != 0 {
		skip = 8
	}
	if len(iinf) < skip {
		return 0, false
	}
	var (
		id    uint32
		found bool
	)
	eachBox(iinf[skip:], func(t string, p []byte) bool {
		if t != "infe" || len(p) < 4 || p[0] < 2 {
			return true
		}
		r := reader{b: p[4:]}
		itemID := r.uint(2)
		if p[0] >= 3 {
			itemID = r.uint(4)
		}
		r.uint(2) // protection index
		if typ := r.bytes(4); !r.bad && match(string(typ), r.b) {
			id, found = uint32(itemID), true
			return false
		}
		return true
	})
	return id, found
}

// itemData returns the bytes of item id from an iloc box, when they lie in
// the file (construction method 0) and come to at most limit bytes.
func itemData(data, iloc []byte, id uint32, limit int) []byte {
	if len(iloc) < 8 {
		return nil
	}
	version := iloc[0]
	r := reader{b: iloc[4:]}
	sizes := r.uint(1)
	offSize, lenSize := int(sizes>>4), int(sizes&15)
	sizes = r.uint(1)
	baseSize, idxSize := int(sizes>>4), int(sizes&15)
	if version == 0 {
		idxSize = 0
	}
	count := r.uint(2)
	if version == 2 {
		count = r.uint(4)
	}
	for i := uint64(0); i < count && !r.bad; i++ {
		itemID := r.uint(2)
		if version == 2 {
			itemID = r.uint(4)
		}
		method := uint64(0)
		if version == 1 || version == 2 {
			method = r.uint(2) & 15
		}
		r.uint(2) // data reference index
		base := r.uint(baseSize)
		extents := r.uint(2)
		var out []byte
		for e := uint64(0); e < extents && !r.bad; e++ {
			r.uint(idxSize)
			off, n := base+r.uint(offSize), r.uint(lenSize)
			if itemID != uint64(id) || method != 0 {
				continue
			}
			if off > uint64(len(data)) || n > uint64(len(data))-off {
				return nil
			}
			if n == 0 {
				n = uint64(len(data)) - off
			}
			// Extents may repeat the same bytes: the limit keeps a
			// small file from making a large item.
			if n > uint64(limit-len(out)) {
				return nil
			}
			out = append(out, data[off:off+n]...)
		}
		if itemID == uint64(id) {
			return out
		}
	}
	return nil
}

// reader reads big-endian integers of 0 to 8 bytes; reading past the end
// sets bad and returns 0.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) bytes(n int) []byte {
	if r.bad || n > len(r.b) {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) uint(n int) uint64 {
	var v uint64
	for _, c := range r.bytes(n) {
		v = v<<8 | uint64(c)
	}
	return v
}

// Colour signalling (ITU-T H.273) that needs tone-mapping to SDR.
const (
	transferPQ      = 16 // SMPTE ST 2084
	transferHLG     = 18 // ARIB STD-B67
	primariesBT2020 = 9
	primariesP3     = 12 // SMPTE EG 432 (Display P3)
)

// heifHDR returns the colour primaries and transfer of a HEIF or AVIF
// whose nclx colour box says PQ or HLG, or 0, 0 for SDR.
func heifHDR(data []byte) (primaries, transfer int) {
	meta := findBox(data, "meta")
	if len(meta) < 4 {
		return 0, 0
	}
	eachBox(findBox(findBox(meta[4:], "iprp"), "ipco"), func(t string, p []byte) bool {
		if t != "colr" || len(p) < 10 || string(p[:4]) != "nclx" {
			return true
		}
		prim, tr := int(binary.BigEndian.Uint16(p[4:])), int(binary.BigEndian.Uint16(p[6:]))
		if tr == transferPQ || tr == transferHLG {
			primaries, transfer = prim, tr
			return false
		}
		return true
	})
	return primaries, transfer
}
