// Package formats lists the original image formats Lightbox accepts: their
// MIME types, their file extensions and how to recognise them from their
// first bytes. It has no cgo and no decoders, so the API server can check
// uploads without linking an image library.
package formats

import (
	"bytes"
	"encoding/binary"
	"path"
	"slices"
	"strings"
)

// Format is an original's format.
type Format string

// Accepted formats. The raw formats are told apart by their container or,
// for the TIFF-shaped ones, by the camera maker; DNG by its version tag.
const (
	JPEG Format = "jpeg"
	PNG  Format = "png"
	GIF  Format = "gif"
	WebP Format = "webp"
	TIFF Format = "tiff"
	HEIF Format = "heif"
	AVIF Format = "avif"
	JXL  Format = "jxl"
	DNG  Format = "dng"
	CR2  Format = "cr2"
	CR3  Format = "cr3"
	CRW  Format = "crw"
	NEF  Format = "nef"
	NRW  Format = "nrw"
	ARW  Format = "arw"
	RAF  Format = "raf"
	ORF  Format = "orf"
	RW2  Format = "rw2"
	PEF  Format = "pef"
	SRW  Format = "srw"
)

type info struct {
	mime  string   // the content type stored and served for originals
	alias []string // other content types clients send for it
	exts  []string
	raw   bool
}

var table = map[Format]info{
	JPEG: {mime: "image/jpeg", exts: []string{".jpg", ".jpeg", ".jpe"}},
	PNG:  {mime: "image/png", exts: []string{".png"}},
	GIF:  {mime: "image/gif", exts: []string{".gif"}},
	WebP: {mime: "image/webp", exts: []string{".webp"}},
	TIFF: {mime: "image/tiff", exts: []string{".tif", ".tiff"}},
	HEIF: {mime: "image/heic", alias: []string{"image/heif", "image/heic-sequence", "image/heif-sequence"}, exts: []string{".heic", ".heif", ".hif"}},
	AVIF: {mime: "image/avif", exts: []string{".avif"}},
	JXL:  {mime: "image/jxl", exts: []string{".jxl"}},
	DNG:  {mime: "image/x-adobe-dng", alias: []string{"image/dng"}, exts: []string{".dng"}, raw: true},
	CR2:  {mime: "image/x-canon-cr2", exts: []string{".cr2"}, raw: true},
	CR3:  {mime: "image/x-canon-cr3", exts: []string{".cr3"}, raw: true},
	CRW:  {mime: "image/x-canon-crw", exts: []string{".crw"}, raw: true},
	NEF:  {mime: "image/x-nikon-nef", exts: []string{".nef"}, raw: true},
	NRW:  {mime: "image/x-nikon-nrw", exts: []string{".nrw"}, raw: true},
	ARW:  {mime: "image/x-sony-arw", exts: []string{".arw"}, raw: true},
	RAF:  {mime: "image/x-fuji-raf", exts: []string{".raf"}, raw: true},
	ORF:  {mime: "image/x-olympus-orf", exts: []string{".orf"}, raw: true},
	RW2:  {mime: "image/x-panasonic-rw2", alias: []string{"image/x-panasonic-raw"}, exts: []string{".rw2"}, raw: true},
	PEF:  {mime: "image/x-pentax-pef", exts: []string{".pef"}, raw: true},
	SRW:  {mime: "image/x-samsung-srw", exts: []string{".srw"}, raw: true},
}

// ContentType is the MIME type Lightbox records for the format.
func (f Format) ContentType() string { return table[f].mime }

// IsRaw reports whether the format is a camera raw (DNG included).
func (f Format) IsRaw() bool { return table[f].raw }

// RawContentTypes lists the content types recorded for camera raws (DNG
// included), sorted.
func RawContentTypes() []string {
	var out []string
	for _, in := range table {
		if in.raw {
			out = append(out, in.mime)
		}
	}
	slices.Sort(out)
	return out
}

// FromExt names the format a file name's extension implies, or "".
func FromExt(name string) Format {
	ext := strings.ToLower(path.Ext(name))
	for f, in := range table {
		for _, e := range in.exts {
			if e == ext {
				return f
			}
		}
	}
	return ""
}

// FromContentType names the format of a MIME type (parameters already
// removed), or "". Generic types such as application/octet-stream, which
// browsers send for raws, name nothing.
func FromContentType(mt string) Format {
	mt = strings.ToLower(mt)
	for f, in := range table {
		if in.mime == mt {
			return f
		}
		for _, a := range in.alias {
			if a == mt {
				return f
			}
		}
	}
	return ""
}

// Accepted is one accepted format as a client choosing files needs it.
type Accepted struct {
	ContentType string   `json:"contentType"`       // recorded for its originals
	Aliases     []string `json:"aliases,omitempty"` // other types clients send for it
	Extensions  []string `json:"extensions"`
}

// All lists the accepted formats, by content type.
func All() []Accepted {
	out := make([]Accepted, 0, len(table))
	for _, in := range table {
		out = append(out, Accepted{ContentType: in.mime, Aliases: in.alias, Extensions: in.exts})
	}
	slices.SortFunc(out, func(a, b Accepted) int { return strings.Compare(a.ContentType, b.ContentType) })
	return out
}

// Names lists the accepted formats for people: "JPEG, PNG, …, and camera raws".
const Names = "JPEG, PNG, GIF, WebP, TIFF, HEIC/HEIF, AVIF, JPEG XL, DNG and camera raws (CR2, CR3, CRW, NEF, NRW, ARW, RAF, ORF, RW2, PEF, SRW)"

// Sniff names the format of a file from its first bytes (a few KiB are
// enough; TIFF-shaped raws are told from TIFF by their first directory),
// ignoring any file name or declared type. It returns "" for anything else.
func Sniff(head []byte) Format {
	switch {
	case bytes.HasPrefix(head, []byte{0xFF, 0xD8, 0xFF}):
		return JPEG
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return PNG
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return GIF
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return WebP
	case bytes.HasPrefix(head, []byte{0xFF, 0x0A}), bytes.HasPrefix(head, []byte("\x00\x00\x00\x0cJXL \r\n\x87\n")):
		return JXL
	case bytes.HasPrefix(head, []byte("FUJIFILMCCD-RAW")):
		return RAF
	case len(head) >= 14 && string(head[:2]) == "II" && string(head[6:14]) == "HEAPCCDR":
		return CRW
	case bytes.HasPrefix(head, []byte("IIU\x00")):
		return RW2
	case bytes.HasPrefix(head, []byte("IIRO")), bytes.HasPrefix(head, []byte("IIRS")), bytes.HasPrefix(head, []byte("MMOR")):
		return ORF
	case bytes.HasPrefix(head, []byte("II*\x00")), bytes.HasPrefix(head, []byte("MM\x00*")):
		return sniffTIFF(head)
	case len(head) >= 12 && string(head[4:8]) == "ftyp":
		return sniffFtyp(head)
	}
	return ""
}

// sniffFtyp reads the brands of an ISO base media file (HEIF, AVIF, CR3).
func sniffFtyp(head []byte) Format {
	n := int(binary.BigEndian.Uint32(head))
	if n < 16 || n > len(head) {
		n = min(len(head), 64)
	}
	var found Format
	for i := 8; i+4 <= n; i += 4 {
		if i == 12 {
			continue // minor version
		}
		switch string(head[i : i+4]) {
		case "crx ":
			return CR3
		case "avif", "avis":
			return AVIF
		case "heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs", "mif1", "msf1", "mif2":
			if found == "" {
				found = HEIF
			}
		}
	}
	return found
}

// rawMakers are the makers whose TIFF-shaped files are raws, by the
// format their raws take.
var rawMakers = []struct {
	prefix string
	f      Format
}{
	{"NIKON", NEF}, {"SONY", ARW}, {"PENTAX", PEF}, {"RICOH", PEF}, {"SAMSUNG", SRW},
	{"CANON", CR2}, {"OLYMPUS", ORF}, {"OM DIGITAL", ORF}, {"PANASONIC", RW2}, {"LEICA", RW2},
}

// sniffTIFF tells a camera raw from a plain TIFF by the first directory: a
// DNGVersion tag, Canon's CR2 marker, or a camera maker together with the
// sub-directories, reduced-size first image or sensor (CFA) data that raws
// have.
func sniffTIFF(head []byte) Format {
	if len(head) >= 12 && string(head[8:10]) == "CR" && head[10] == 2 {
		return CR2
	}
	if len(head) < 8 {
		return TIFF // too short to hold the first directory's offset
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if head[0] == 'M' {
		bo = binary.BigEndian
	}
	off := uint64(bo.Uint32(head[4:]))
	if off+2 > uint64(len(head)) {
		return TIFF
	}
	n := uint64(bo.Uint16(head[off:]))
	var make string
	rawish := false
	for i := uint64(0); i < n && off+2+12*i+12 <= uint64(len(head)); i++ {
		e := head[off+2+12*i:]
		tag, count := bo.Uint16(e), uint64(bo.Uint32(e[4:]))
		switch tag {
		case 0xC612: // DNGVersion
			return DNG
		case 0x00FE: // NewSubfileType: 1 is a reduced-size image
			rawish = rawish || bo.Uint32(e[8:]) == 1
		case 0x014A: // SubIFDs
			rawish = true
		case 0x0106: // PhotometricInterpretation: CFA or LinearRaw is sensor data
			v := bo.Uint16(e[8:])
			rawish = rawish || v == 32803 || v == 34892
		case 0x010F: // Make
			v := e[8:12]
			if count > 4 {
				at := uint64(bo.Uint32(e[8:]))
				if at+count > uint64(len(head)) {
					continue
				}
				v = head[at : at+count]
			}
			make = strings.ToUpper(strings.TrimRight(string(v), "\x00 "))
		}
	}
	if rawish {
		for _, m := range rawMakers {
			if strings.HasPrefix(make, m.prefix) {
				return m.f
			}
		}
	}
	return TIFF
}
