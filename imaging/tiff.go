package imaging

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// A TIFF-structured block: EXIF in JPEG, PNG, WebP, HEIF and AVIF, and the
// whole file of TIFF, DNG and most camera raws. The reader works on the
// bytes in memory and cannot loop: every directory is read at most once,
// at most maxIFDs of them, and no offset outside the block is followed.

// maxIFDs bounds the directories read from one block; real files have a
// handful (IFD0, Exif, GPS, interoperability, maker note, a few previews).
const maxIFDs = 64

// maxIFDEntries bounds the entries of one directory.
const maxIFDEntries = 1000

type tiffBlock struct {
	b        []byte // from the byte-order mark on
	order    binary.ByteOrder
	seen     map[uint32]bool
	problems []string
}

// tiffTag is one directory entry: its type, count and value bytes (a slice
// of the block, or of the entry itself when the value fits in 4 bytes).
type tiffTag struct {
	typ   uint16
	count uint32
	val   []byte
	at    uint32 // the value's offset in the block (0 when inline)
}

// tiffDir is one directory by tag. A nil tiffDir answers nothing.
type tiffDir map[uint16]tiffTag

// newTIFFBlock checks the header of a TIFF block, skipping an "Exif\0\0"
// prefix, and returns the offset of the first directory. Besides TIFF's 42
// it accepts the magic numbers of Panasonic (RW2, 0x55) and Olympus (ORF)
// raws, which are TIFF otherwise.
func newTIFFBlock(b []byte) (*tiffBlock, uint32, error) {
	b = bytes.TrimPrefix(b, []byte("Exif\x00\x00"))
	if len(b) < 8 {
		return nil, 0, errors.New("too short for a TIFF header")
	}
	t := &tiffBlock{b: b, seen: map[uint32]bool{}}
	switch string(b[:2]) {
	case "II":
		t.order = binary.LittleEndian
	case "MM":
		t.order = binary.BigEndian
	default:
		return nil, 0, errors.New("no TIFF byte-order mark")
	}
	switch t.order.Uint16(b[2:]) {
	case 42, 0x55, 0x4F52, 0x5352, 0x524F:
	default:
		return nil, 0, errors.New("no TIFF magic number")
	}
	return t, t.order.Uint32(b[4:]), nil
}

func (t *tiffBlock) problem(msg string) {
	if len(t.problems) < 8 {
		t.problems = append(t.problems, msg)
	}
}

// typeSize is the byte size of one value of a TIFF type, 0 if unknown.
func typeSize(typ uint16) uint64 {
	switch typ {
	case 1, 2, 6, 7: // BYTE, ASCII, SBYTE, UNDEFINED
		return 1
	case 3, 8: // SHORT, SSHORT
		return 2
	case 4, 9, 11, 13: // LONG, SLONG, FLOAT, IFD
		return 4
	case 5, 10, 12: // RATIONAL, SRATIONAL, DOUBLE
		return 8
	}
	return 0
}

// ifd reads the directory at off. It returns nil, noting why, when off is 0,
// outside the block, already read (a loop) or past the directory budget.
func (t *tiffBlock) ifd(off uint32, name string) tiffDir {
	if t == nil || off == 0 {
		return nil
	}
	switch {
	case t.seen[off]:
		t.problem(fmt.Sprintf("EXIF block is partly unreadable: %s points back to a directory already read", name))
		return nil
	case len(t.seen) >= maxIFDs:
		t.problem("EXIF block is partly unreadable: too many directories")
		return nil
	case uint64(off)+2 > uint64(len(t.b)):
		t.problem(fmt.Sprintf("EXIF block is partly unreadable: %s lies outside the block", name))
		return nil
	}
	t.seen[off] = true
	n := uint64(t.order.Uint16(t.b[off:]))
	if n == 0 || n > maxIFDEntries || uint64(off)+2+12*n > uint64(len(t.b)) {
		t.problem(fmt.Sprintf("EXIF block is partly unreadable: %s has a bad entry count (%d)", name, n))
		return nil
	}
	d := make(tiffDir, n)
	for i := uint64(0); i < n; i++ {
		e := t.b[uint64(off)+2+12*i:][:12]
		tag := tiffTag{typ: t.order.Uint16(e[2:]), count: t.order.Uint32(e[4:])}
		size := typeSize(tag.typ) * uint64(tag.count)
		if size == 0 {
			t.problem(fmt.Sprintf("EXIF block is partly unreadable: %s has an entry of unknown type %d", name, tag.typ))
			continue
		}
		if size <= 4 {
			tag.val = e[8 : 8+size]
		} else {
			tag.at = t.order.Uint32(e[8:])
			if uint64(tag.at)+size > uint64(len(t.b)) {
				t.problem(fmt.Sprintf("EXIF block is partly unreadable: tag 0x%04x of %s lies outside the block", t.order.Uint16(e), name))
				continue
			}
			tag.val = t.b[tag.at : uint64(tag.at)+size]
		}
		d[t.order.Uint16(e)] = tag
	}
	return d
}

// next returns the offset of the directory after the one at off, or 0.
func (t *tiffBlock) next(off uint32) uint32 {
	if off == 0 || uint64(off)+2 > uint64(len(t.b)) {
		return 0
	}
	end := uint64(off) + 2 + 12*uint64(t.order.Uint16(t.b[off:]))
	if end+4 > uint64(len(t.b)) {
		return 0
	}
	return t.order.Uint32(t.b[end:])
}

// str returns an ASCII tag without its trailing NULs and spaces.
func (d tiffDir) str(t *tiffBlock, id uint16) string {
	tag, ok := d[id]
	if !ok || (tag.typ != 2 && tag.typ != 7) {
		return ""
	}
	s, _, _ := strings.Cut(string(tag.val), "\x00")
	return strings.TrimSpace(s)
}

// uint returns the first value of a BYTE, SHORT or LONG tag.
func (d tiffDir) uint(t *tiffBlock, id uint16) (uint32, bool) {
	return d.uintAt(t, id, 0)
}

func (d tiffDir) uintAt(t *tiffBlock, id uint16, i int) (uint32, bool) {
	tag, ok := d[id]
	if !ok || uint32(i) >= tag.count {
		return 0, false
	}
	switch tag.typ {
	case 1:
		return uint32(tag.val[i]), true
	case 3:
		return uint32(t.order.Uint16(tag.val[2*i:])), true
	case 4, 13:
		return t.order.Uint32(tag.val[4*i:]), true
	}
	return 0, false
}

// offset returns a LONG or IFD tag's value: an offset in the block.
func (d tiffDir) offset(t *tiffBlock, id uint16) uint32 {
	if tag, ok := d[id]; ok && tag.typ == 7 {
		return tag.at // a maker note: its value is the directory
	}
	v, _ := d.uint(t, id)
	return v
}

// rat returns the i-th value of a RATIONAL tag, 0 when absent or invalid.
func (d tiffDir) rat(t *tiffBlock, id uint16, i int) float64 {
	tag, ok := d[id]
	if !ok || (tag.typ != 5 && tag.typ != 10) || uint32(i) >= tag.count {
		return 0
	}
	num, den := t.order.Uint32(tag.val[8*i:]), t.order.Uint32(tag.val[8*i+4:])
	if den == 0 {
		return 0
	}
	if tag.typ == 10 {
		return float64(int32(num)) / float64(int32(den))
	}
	return float64(num) / float64(den)
}

// coord reads a GPS coordinate: a reference tag ("N", "S", "E", "W") and
// three rationals (degrees, minutes, seconds).
func (d tiffDir) coord(t *tiffBlock, refID, valID uint16) (float64, bool) {
	tag, ok := d[valID]
	if !ok || tag.typ != 5 || tag.count < 3 {
		return 0, false
	}
	v := d.rat(t, valID, 0) + d.rat(t, valID, 1)/60 + d.rat(t, valID, 2)/3600
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	if ref := d.str(t, refID); ref == "S" || ref == "W" {
		v = -v
	}
	return v, true
}

// tiffXMP returns the XMP packet of a TIFF, DNG or TIFF-shaped raw: tag
// 700 (XMLPacket) of IFD0, of type BYTE or UNDEFINED, or nil. It is a
// slice of the block, which ifd has checked; xmp.Read refuses one over
// its size limit, with a warning.
func tiffXMP(block []byte) []byte {
	t, first, err := newTIFFBlock(block)
	if err != nil {
		return nil
	}
	if tag, ok := t.ifd(first, "IFD0")[700]; ok && (tag.typ == 1 || tag.typ == 7) {
		return tag.val
	}
	return nil
}
