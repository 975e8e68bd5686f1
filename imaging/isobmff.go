package imaging

import (
	"bytes"
	"encoding/binary"
)

// The EXIF of ISO base media files: HEIF and AVIF keep it as an item of the
// meta box, JPEG XL as an "Exif" box, CR3 as CMT boxes in a Canon uuid box.
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

// canonUUID names the box of a CR3 that holds its metadata.
var canonUUID = []byte{0x85, 0xc0, 0xb6, 0x87, 0x82, 0x0f, 0x11, 0xe0, 0x81, 0x11, 0xf4, 0xce, 0x46, 0x2b, 0x6a, 0x48}

// cr3Exif returns a CR3's IFD0 (CMT1) and Exif directory (CMT2), each a
// TIFF block of its own.
func cr3Exif(data []byte) (ifd0, exifIFD []byte) {
	eachBox(findBox(data, "moov"), func(t string, p []byte) bool {
		if t != "uuid" || !bytes.HasPrefix(p, canonUUID) {
			return true
		}
		ifd0, exifIFD = findBox(p[16:], "CMT1"), findBox(p[16:], "CMT2")
		return false
	})
	return ifd0, exifIFD
}

// heifExif returns the EXIF block of a HEIF or AVIF file: the item of type
// "Exif" in the meta box, located by iloc.
func heifExif(data []byte) []byte {
	meta := findBox(data, "meta")
	if len(meta) < 4 {
		return nil
	}
	meta = meta[4:] // a full box: version and flags
	id, ok := exifItemID(findBox(meta, "iinf"))
	if !ok {
		return nil
	}
	return exifPayload(itemData(data, findBox(meta, "iloc"), id))
}

// exifItemID finds the id of the "Exif" item in an iinf box.
func exifItemID(iinf []byte) (uint32, bool) {
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
		if typ := r.bytes(4); !r.bad && string(typ) == "Exif" {
			id, found = uint32(itemID), true
			return false
		}
		return true
	})
	return id, found
}

// itemData returns the bytes of item id from an iloc box, when they lie in
// the file (construction method 0).
func itemData(data, iloc []byte, id uint32) []byte {
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
