package xmp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// JPEG APP1 headers of an XMP packet and of the extended-XMP chunks.
var (
	xmpHeader      = []byte("http://ns.adobe.com/xap/1.0/\x00")
	extendedHeader = []byte("http://ns.adobe.com/xmp/extension/\x00")
)

// MaxJPEGPacket is the largest packet one JPEG APP1 segment holds, as
// the XMP specification gives it.
const MaxJPEGPacket = 65502

// EmbedJPEG returns jpeg with packet as its XMP APP1 segment, replacing any
// XMP segment (and extended-XMP segments) it had; every other byte, and the
// compressed scan data, is kept as it was. A packet too big for one segment
// (65,502 bytes) is an error.
//
// The segment goes after the JFIF and Exif segments that lead the file,
// where readers look first.
func EmbedJPEG(jpeg, packet []byte) ([]byte, error) {
	if len(packet) > MaxJPEGPacket {
		return nil, fmt.Errorf("xmp packet of %d bytes, more than the %d a JPEG segment holds", len(packet), MaxJPEGPacket)
	}
	if len(jpeg) < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8 {
		return nil, errors.New("not a JPEG: no SOI marker")
	}
	seg := make([]byte, 0, 4+len(xmpHeader)+len(packet))
	seg = append(seg, 0xFF, 0xE1)
	seg = binary.BigEndian.AppendUint16(seg, uint16(2+len(xmpHeader)+len(packet)))
	seg = append(append(seg, xmpHeader...), packet...)

	out := make([]byte, 0, len(jpeg)+len(seg))
	out = append(out, jpeg[:2]...)
	placed, leading := false, true
	place := func() {
		if !placed {
			out = append(out, seg...)
			placed = true
		}
	}
	for i := 2; ; {
		if i >= len(jpeg) || jpeg[i] != 0xFF {
			return nil, fmt.Errorf("not a JPEG: no marker at byte %d", i)
		}
		// Fill bytes (0xFF runs) before a marker are kept with it.
		j := i
		for j+1 < len(jpeg) && jpeg[j+1] == 0xFF {
			j++
		}
		if j+3 >= len(jpeg) {
			return nil, errors.New("not a JPEG: cut short before the scan")
		}
		marker := jpeg[j+1]
		if marker == 0xD9 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7) {
			return nil, fmt.Errorf("not a JPEG: marker %02X before the scan", marker)
		}
		end := j + 2 + int(binary.BigEndian.Uint16(jpeg[j+2:]))
		if end > len(jpeg) || end < j+4 {
			return nil, fmt.Errorf("not a JPEG: segment %02X at byte %d runs past the end", marker, i)
		}
		body := jpeg[j+4 : end]
		isXMP := marker == 0xE1 && (bytes.HasPrefix(body, xmpHeader) || bytes.HasPrefix(body, extendedHeader))
		if leading && marker != 0xE0 && !(marker == 0xE1 && !isXMP) {
			leading = false
			if !isXMP {
				place()
			}
		}
		switch {
		case isXMP:
			place()
		case marker == 0xDA:
			// The scan and all after it are kept byte for byte.
			place()
			return append(out, jpeg[i:]...), nil
		default:
			out = append(out, jpeg[i:end]...)
		}
		i = end
	}
}

// TIFF tag 700 holds the XMP packet; BYTE is the type the XMP
// specification gives it.
const (
	tagXMP   = 700
	typeByte = 1
)

// EmbedTIFF returns a TIFF or DNG file with packet as IFD0's tag 700
// (XMLPacket), replacing the one it had; image data bytes are kept as they
// were (write the packet at the end of the file and patch/rewrite IFD0 only).
//
// The old IFD0 and packet stay in the file, unreferenced: moving nothing
// keeps every offset other IFDs, maker notes and strips hold valid. When
// they are all that ends the file, as after an earlier EmbedTIFF, they
// are cut, so that embedding again does not grow the file.
func EmbedTIFF(tiff, packet []byte) ([]byte, error) {
	if len(tiff) < 8 {
		return nil, errors.New("not a TIFF: too short")
	}
	var bo interface {
		binary.ByteOrder
		binary.AppendByteOrder
	}
	switch string(tiff[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	case "II+\x00", "MM\x00+":
		return nil, errors.New("BigTIFF is not supported")
	default:
		return nil, errors.New("not a TIFF: no II*/MM* header")
	}
	ifd := int(bo.Uint32(tiff[4:]))
	if ifd < 8 || ifd+2 > len(tiff) {
		return nil, fmt.Errorf("not a TIFF: IFD0 at %d is outside the file", ifd)
	}
	n := int(bo.Uint16(tiff[ifd:]))
	if ifd+2+12*n+4 > len(tiff) {
		return nil, errors.New("not a TIFF: IFD0 runs past the end")
	}
	var entries [][]byte
	keep := len(tiff)
	for k := range n {
		e := tiff[ifd+2+12*k : ifd+2+12*k+12]
		if bo.Uint16(e) != tagXMP {
			entries = append(entries, e)
			continue
		}
		if at, size := int(bo.Uint32(e[8:])), int(bo.Uint32(e[4:])); size > 4 && at == ifd+2+12*n+4 && at+size == len(tiff) {
			keep = ifd // IFD0 and then its packet end the file
		}
	}
	next := tiff[ifd+2+12*n : ifd+2+12*n+4]

	out := make([]byte, 0, keep+1+2+12*(len(entries)+1)+4+len(packet))
	out = append(out, tiff[:keep]...)
	if len(out)%2 == 1 {
		out = append(out, 0) // offsets are to words
	}
	newIFD := len(out)
	packetAt := newIFD + 2 + 12*(len(entries)+1) + 4
	if uint64(packetAt)+uint64(len(packet)) > math.MaxUint32 {
		return nil, errors.New("the file would pass the 4 GiB a TIFF can address")
	}
	e := make([]byte, 12)
	bo.PutUint16(e, tagXMP)
	bo.PutUint16(e[2:], typeByte)
	bo.PutUint32(e[4:], uint32(len(packet)))
	if len(packet) <= 4 {
		copy(e[8:], packet)
	} else {
		bo.PutUint32(e[8:], uint32(packetAt))
	}
	entries = append(entries, e)
	// Entries are sorted by tag; the rest keep their order.
	slices.SortStableFunc(entries, func(a, b []byte) int { return int(bo.Uint16(a)) - int(bo.Uint16(b)) })

	out = bo.AppendUint16(out, uint16(len(entries)))
	for _, e := range entries {
		out = append(out, e...)
	}
	out = append(out, next...)
	if len(packet) > 4 {
		out = append(out, packet...)
	}
	bo.PutUint32(out[4:], uint32(newIFD))
	return out, nil
}
