package imaging

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"lightbox/xmp"
)

// xmpPrefix starts the JPEG APP1 segment that holds an XMP packet.
var xmpPrefix = []byte("http://ns.adobe.com/xap/1.0/\x00")

// xmpExtPrefix starts the JPEG APP1 segments of an extended XMP packet,
// one too large for a segment: then come a 32-digit GUID, the packet's
// full length and the chunk's offset in it (32 bits each, big-endian),
// and the chunk.
var xmpExtPrefix = []byte("http://ns.adobe.com/xmp/extension/\x00")

// readDecisions reads the decisions of a photo's packet and of the
// extended packet it names in segs, if any. A refused packet gives none,
// as if there were no packet; a refused or broken extension leaves the
// main packet's.
func readDecisions(packet []byte, segs [][]byte) (*xmp.Decisions, []string) {
	// Some writers end the packet as a C string (Apple's HEIC).
	packet = bytes.TrimRight(packet, "\x00")
	d, warn, err := xmp.Read(packet)
	if err != nil {
		return nil, []string{"XMP packet ignored: " + err.Error()}
	}
	ext, err := extendedXMP(packet, segs)
	if err == nil && ext != nil {
		var (
			e xmp.Decisions
			w []string
		)
		if e, w, err = xmp.Read(ext); err == nil {
			mergeDecisions(&d, e)
			warn = append(warn, w...)
		}
	}
	if err != nil {
		warn = append(warn, "extended XMP packet ignored: "+err.Error())
	}
	return &d, warn
}

// extendedXMP reassembles the extended packet that packet names by its
// xmpNote:HasExtendedXMP GUID from the segments of that GUID. It returns
// nil when packet names none or no segment carries it (segments of
// another GUID are left over from an earlier edit), and an error when the
// segments do not make a whole of at most xmp.MaxPacket bytes.
func extendedXMP(packet []byte, segs [][]byte) ([]byte, error) {
	guid := extendedXMPGUID(packet)
	if guid == "" || len(segs) == 0 {
		return nil, nil
	}
	type chunk struct {
		off int
		b   []byte
	}
	var (
		chunks      []chunk
		full, total = -1, 0
	)
	for _, s := range segs {
		if len(s) < 40 || string(s[:32]) != guid {
			continue
		}
		n, off := binary.BigEndian.Uint32(s[32:]), binary.BigEndian.Uint32(s[36:])
		switch {
		case n == 0 || n > xmp.MaxPacket:
			return nil, fmt.Errorf("its length, %d bytes, is not 1 to %d", n, xmp.MaxPacket)
		case full >= 0 && int(n) != full:
			return nil, errors.New("its segments disagree on its length")
		case uint64(off)+uint64(len(s)-40) > uint64(n):
			return nil, errors.New("a segment lies outside it")
		}
		full, total = int(n), total+len(s)-40
		chunks = append(chunks, chunk{int(off), s[40:]})
	}
	switch {
	case full < 0:
		return nil, nil
	case total < full: // before allocating what a few bytes claim
		return nil, errors.New("some of its segments are missing")
	}
	slices.SortFunc(chunks, func(a, b chunk) int { return cmp.Compare(a.off, b.off) })
	out := make([]byte, full)
	end := 0
	for _, c := range chunks {
		if c.off > end {
			break // a gap
		}
		copy(out[c.off:], c.b) // repeated or overlapping chunks carry the same bytes
		end = max(end, c.off+len(c.b))
	}
	if end != full {
		return nil, errors.New("some of its segments are missing")
	}
	return out, nil
}

// extendedXMPGUID returns the 32 hex digits of a packet's
// xmpNote:HasExtendedXMP, as an attribute or an element, or "".
func extendedXMPGUID(packet []byte) string {
	const name = "HasExtendedXMP"
	i := bytes.Index(packet, []byte(name))
	if i < 0 {
		return ""
	}
	rest := packet[i+len(name):]
	k := 0
	for k < len(rest) && k < 8 && strings.IndexByte("= \t\r\n\"'>", rest[k]) >= 0 {
		k++
	}
	if len(rest) < k+32 {
		return ""
	}
	for _, c := range rest[k : k+32] {
		if !strings.ContainsRune("0123456789ABCDEFabcdef", rune(c)) {
			return ""
		}
	}
	return string(rest[k : k+32])
}

// mergeDecisions fills what d leaves empty from e, the extended packet's:
// writers move the properties that do not fit one segment there.
func mergeDecisions(d *xmp.Decisions, e xmp.Decisions) {
	if d.Rating == 0 && !d.Rejected {
		d.Rating = e.Rating
	}
	if !d.Rejected && !d.Picked {
		d.Rejected, d.Picked = e.Rejected, e.Picked
	}
	if d.ColorLabel == "" {
		d.ColorLabel = e.ColorLabel
	}
	if len(d.Keywords) == 0 {
		d.Keywords = e.Keywords
	}
	// Every caption is a string; reflection keeps this whole as captions
	// are added.
	dv, ev := reflect.ValueOf(&d.IPTC).Elem(), reflect.ValueOf(e.IPTC)
	for i := range dv.NumField() {
		if f := dv.Field(i); f.Kind() == reflect.String && f.String() == "" {
			f.Set(ev.Field(i))
		}
	}
}

// maxXMPTokens bounds the XML read from one packet; real packets have far
// fewer before their camera fields.
const maxXMPTokens = 20000

// xmpFields are the XMP properties read, by namespace and local name, as
// attributes (the compact form) or elements with text.
var xmpFields = map[xml.Name]string{
	{Space: "http://ns.adobe.com/tiff/1.0/", Local: "Make"}:             "make",
	{Space: "http://ns.adobe.com/tiff/1.0/", Local: "Model"}:            "model",
	{Space: "http://ns.adobe.com/exif/1.0/aux/", Local: "Lens"}:         "lens",
	{Space: "http://cipa.jp/exif/1.0/", Local: "LensModel"}:             "lens",
	{Space: "http://ns.adobe.com/exif/1.0/", Local: "DateTimeOriginal"}: "date",
	{Space: "http://ns.adobe.com/xap/1.0/", Local: "CreateDate"}:        "created",
	{Space: "http://ns.adobe.com/exif/1.0/", Local: "GPSLatitude"}:      "lat",
	{Space: "http://ns.adobe.com/exif/1.0/", Local: "GPSLongitude"}:     "lon",
}

// readXMP fills the empty fields of m from an XMP packet:
// camera, lens, capture time (with its offset) and position. It reads a
// bounded number of XML tokens and never fails; a broken packet gives
// what was read before the break.
func readXMP(m *Metadata, packet []byte) {
	found := map[string]string{}
	d := xml.NewDecoder(bytes.NewReader(packet))
	d.Strict = false
	var open string // the field whose element is open
	for n := 0; n < maxXMPTokens; n++ {
		tok, err := d.Token()
		if err != nil {
			break // the end, or a broken packet: keep what was read
		}
		switch t := tok.(type) {
		case xml.StartElement:
			for _, a := range t.Attr {
				if f, ok := xmpFields[a.Name]; ok && found[f] == "" {
					found[f] = strings.TrimSpace(a.Value)
				}
			}
			open = xmpFields[t.Name]
		case xml.CharData:
			if s := strings.TrimSpace(string(t)); open != "" && s != "" && found[open] == "" {
				found[open] = s
			}
		case xml.EndElement:
			open = ""
		}
	}
	if m.CameraMake == "" {
		m.CameraMake = found["make"]
	}
	if m.CameraModel == "" {
		m.CameraModel = found["model"]
	}
	if m.LensModel == "" {
		m.LensModel = found["lens"]
	}
	if m.CapturedAt == "" {
		for _, s := range []string{found["date"], found["created"]} {
			if at, off, ok := xmpDate(s); ok {
				m.CapturedAt, m.CapturedAtOffset = at, off
				break
			}
		}
	}
	if m.GPSLatitude == nil {
		lat, okLat := xmpCoord(found["lat"], "NS", 90)
		lon, okLon := xmpCoord(found["lon"], "EW", 180)
		if okLat && okLon && !(lat == 0 && lon == 0) {
			lat, lon = round(lat, 7), round(lon, 7)
			m.GPSLatitude, m.GPSLongitude = &lat, &lon
		}
	}
}

// xmpDate splits an XMP date ("2024-05-06T07:08:09+02:00", seconds,
// fractions and offset optional) into the wall-clock time and its offset.
func xmpDate(s string) (at, offset string, ok bool) {
	for _, layout := range []string{"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.Format("2006-01-02T15:04:05"), t.Format("-07:00"), true
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.Format("2006-01-02T15:04:05"), "", true
		}
	}
	return "", "", false
}

// xmpCoord reads an XMP GPS coordinate: "DDD,MM.mmk" or "DDD,MM,SSk" with
// k one of refs (N and S for a latitude, E and W for a longitude). It is
// refused beyond limit degrees (90 for a latitude, 180 for a longitude).
func xmpCoord(s, refs string, limit float64) (float64, bool) {
	if len(s) < 2 {
		return 0, false
	}
	ref := s[len(s)-1]
	parts := strings.Split(s[:len(s)-1], ",")
	if len(parts) < 2 || len(parts) > 3 || !strings.ContainsRune(refs, rune(ref)) {
		return 0, false
	}
	var v, scale float64 = 0, 1
	for _, p := range parts {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return 0, false
		}
		v += f / scale
		scale *= 60
	}
	if ref == 'S' || ref == 'W' {
		v = -v
	}
	return v, v >= -limit && v <= limit
}
