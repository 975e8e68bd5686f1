package imaging

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"image"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
)

// checkFuzzedMetadata fails on metadata no parser should produce from any input:
// it must go into JSON, and what it says must read back.
func checkFuzzedMetadata(t *testing.T, m Metadata) {
	t.Helper()
	if _, err := json.Marshal(m); err != nil {
		t.Fatalf("metadata does not encode as JSON: %v (%+v)", err, m)
	}
	if m.Orientation < 1 || m.Orientation > 8 {
		t.Fatalf("orientation %d", m.Orientation)
	}
	if m.CapturedAt != "" {
		if _, ok := m.CaptureTime(nil); !ok {
			t.Fatalf("capture time %q%s does not read back", m.CapturedAt, m.CapturedAtOffset)
		}
	}
	if m.CapturedAtOffset != "" && !validOffset(m.CapturedAtOffset) {
		t.Fatalf("offset %q", m.CapturedAtOffset)
	}
	if (m.GPSLatitude == nil) != (m.GPSLongitude == nil) {
		t.Fatal("half a GPS position")
	}
	if m.GPSLatitude != nil && (math.Abs(*m.GPSLatitude) > 90 || math.Abs(*m.GPSLongitude) > 180) {
		t.Fatalf("GPS position %v, %v", *m.GPSLatitude, *m.GPSLongitude)
	}
	for _, v := range []float64{m.FocalLengthMm, m.ExposureSeconds, m.Aperture} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("exposure values %+v", m)
		}
	}
}

// FuzzParseExif feeds TIFF-structured EXIF blocks to the parser directly,
// without the recover readMetadata wraps it in, so an index bug shows as a
// crash. Its work is bounded by the directories it may read.
func FuzzParseExif(f *testing.F) {
	f.Fuzz(func(t *testing.T, block []byte) {
		m := Metadata{Orientation: 1}
		warn := parseExif(&m, block, nil)
		if len(warn) > 16 {
			t.Fatalf("%d warnings", len(warn))
		}
		checkFuzzedMetadata(t, m)
		// Following every next-directory link visits each directory once
		// and at most maxIFDs of them, whatever the offsets say.
		tb, off, err := newTIFFBlock(block)
		if err != nil {
			return
		}
		for i := 0; off != 0; i++ {
			if i > maxIFDs || tb.ifd(off, "IFD") == nil {
				break
			}
			off = tb.next(off)
		}
		if len(tb.seen) > maxIFDs {
			t.Fatalf("%d directories read", len(tb.seen))
		}
	})
}

// FuzzReadXMP feeds XMP packets to the reader, which never fails and reads
// a bounded number of tokens.
func FuzzReadXMP(f *testing.F) {
	f.Fuzz(func(t *testing.T, packet []byte) {
		m := Metadata{Orientation: 1}
		readXMP(&m, packet)
		checkFuzzedMetadata(t, m)
	})
}

// FuzzInspect feeds whole files (their first bytes, as most seeds are) to
// the header checks and the metadata walkers of every container: format
// sniffing, JPEG segments, PNG and WebP chunks, ISO boxes, raw TIFFs.
func FuzzInspect(f *testing.F) {
	for _, name := range slices.Sorted(maps.Keys(xmpSeeds())) {
		f.Add(xmpSeeds()[name])
	}
	cfg := Config{}.withDefaults()
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := inspect(data, cfg)
		if err != nil {
			var ie *Error
			if !errors.As(err, &ie) || ie.Code == "" {
				t.Fatalf("inspect answered %T %v, want an *Error with a code", err, err)
			}
			return
		}
		if h.format == "" {
			t.Fatal("inspect accepted a file of no format")
		}
		m, warn := readMetadata(context.Background(), h)
		if strings.Contains(warn, "metadata parser failed") {
			t.Fatal(warn)
		}
		checkFuzzedMetadata(t, m)
	})
}

// seedPacket is the XMP packet of the seeds, seedExtension the extended
// packet of the JPEG seed, whose GUID seedPacket names.
const (
	seedPacket = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` +
		`<rdf:Description xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:xmpNote="http://ns.adobe.com/xmp/note/" xmp:Rating="2"` +
		` xmpNote:HasExtendedXMP="0123456789ABCDEF0123456789ABCDEF"/></rdf:RDF></x:xmpmeta>`
	seedExtension = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` +
		`<rdf:Description xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/" photoshop:City="Porto"/></rdf:RDF></x:xmpmeta>`
)

// isoBox is an ISO base media box of type typ.
func isoBox(typ string, payload ...[]byte) []byte {
	p := bytes.Join(payload, nil)
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(p)))
	return append(append(b, typ...), p...)
}

// xmpSeeds are small files of each container that carries an XMP packet,
// the packet in its place, so that FuzzInspect starts from inputs that
// reach every packet reader.
func xmpSeeds() map[string][]byte {
	seeds := map[string][]byte{}

	// A 1×1 grey TIFF with tag 700.
	entries := func(pixelAt uint32) []tiffEntry {
		return []tiffEntry{shortEntry(256, 1), shortEntry(257, 1), shortEntry(258, 8), shortEntry(259, 1),
			shortEntry(262, 1), longEntry(273, pixelAt), shortEntry(277, 1), shortEntry(278, 1), longEntry(279, 1),
			{700, 7, uint32(len(seedPacket)), []byte(seedPacket)}}
	}
	ifd := encodeIFD(8, entries(0))
	seeds["tiff"] = append(append([]byte("MM\x00*\x00\x00\x00\x08"), encodeIFD(8, entries(uint32(8+len(ifd))))...), 0x80)

	// A HEIF whose meta box holds only the packet's item.
	ftyp := isoBox("ftyp", []byte("heic\x00\x00\x00\x00mif1heic"))
	infe := isoBox("infe", []byte("\x02\x00\x00\x00\x00\x01\x00\x00mime\x00application/rdf+xml\x00"))
	meta := func(at uint32) []byte {
		iloc := []byte("\x00\x00\x00\x00\x44\x00\x00\x01\x00\x01\x00\x00\x00\x01")
		iloc = binary.BigEndian.AppendUint32(iloc, at)
		iloc = binary.BigEndian.AppendUint32(iloc, uint32(len(seedPacket)))
		return isoBox("meta", []byte{0, 0, 0, 0}, isoBox("iinf", []byte{0, 0, 0, 0, 0, 1}, infe), isoBox("iloc", iloc))
	}
	at := uint32(len(ftyp) + len(meta(0)))
	seeds["heif"] = bytes.Join([][]byte{ftyp, meta(at), []byte(seedPacket)}, nil)

	// A CR3 with no picture: its packet's uuid box beside moov.
	seeds["cr3"] = bytes.Join([][]byte{isoBox("ftyp", []byte("crx \x00\x00\x00\x01crx isom")), isoBox("moov"),
		isoBox("uuid", xmpUUID, []byte(seedPacket))}, nil)

	// A JPEG whose packet names an extension in two segments, the second
	// part first (each is put right after SOI).
	plain, err := encodeJPEG(image.NewGray(image.Rect(0, 0, 8, 8)), 50)
	if err != nil {
		panic(err)
	}
	jpg := withXMP(plain, seedPacket)
	for _, part := range [][2]int{{0, 40}, {40, len(seedExtension)}} {
		seg := append(append([]byte{}, xmpExtPrefix...), "0123456789ABCDEF0123456789ABCDEF"...)
		seg = binary.BigEndian.AppendUint32(seg, uint32(len(seedExtension)))
		seg = binary.BigEndian.AppendUint32(seg, uint32(part[0]))
		seg = append(seg, seedExtension[part[0]:part[1]]...)
		app1 := binary.BigEndian.AppendUint16([]byte{0xFF, 0xE1}, uint16(len(seg)+2))
		jpg = slices.Concat(jpg[:2], app1, seg, jpg[2:])
	}
	seeds["jpeg-extended"] = jpg
	return seeds
}
