package imaging

import (
	"bytes"
	"encoding/xml"
	"strconv"
	"strings"
	"time"
)

// xmpPrefix starts the JPEG APP1 segment that holds an XMP packet.
var xmpPrefix = []byte("http://ns.adobe.com/xap/1.0/\x00")

// maxXMPTokens bounds the XML read from one packet; a JPEG segment holds
// at most 64 KiB, so real packets have far fewer.
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
