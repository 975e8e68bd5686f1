package imaging

import (
	"bytes"
	"encoding/binary"
	"image"
	"math"
	"strings"
	"testing"
)

// xmpJPEG is a small JPEG whose only metadata is an XMP packet.
func xmpJPEG(t *testing.T, packet string) []byte {
	plain, err := encodeJPEG(image.NewRGBA(image.Rect(0, 0, 16, 12)), 90)
	if err != nil {
		t.Fatal(err)
	}
	seg := append(append([]byte(nil), xmpPrefix...), packet...)
	var out bytes.Buffer
	out.Write(plain[:2])
	out.Write([]byte{0xFF, 0xE1})
	out.Write(binary.BigEndian.AppendUint16(nil, uint16(len(seg)+2)))
	out.Write(seg)
	out.Write(plain[2:])
	return out.Bytes()
}

func TestXMPMetadata(t *testing.T) {
	packet := `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" xmlns:exif="http://ns.adobe.com/exif/1.0/"
  xmlns:aux="http://ns.adobe.com/exif/1.0/aux/" tiff:Make="Lightbox Camera Co." tiff:Model="LB-2"
  exif:DateTimeOriginal="2024-05-06T07:08:09.25+02:00" exif:GPSLatitude="33,52.0S" exif:GPSLongitude="70,30,0W">
<aux:Lens>LB 50mm F1.8</aux:Lens></rdf:Description></rdf:RDF></x:xmpmeta>`
	data := xmpJPEG(t, packet)
	forEachEngine(t, func(t *testing.T, e Engine) {
		r := mustProcess(t, e, data)
		m := r.Metadata
		if m.CameraMake != "Lightbox Camera Co." || m.CameraModel != "LB-2" || m.LensModel != "LB 50mm F1.8" {
			t.Errorf("camera %q %q %q", m.CameraMake, m.CameraModel, m.LensModel)
		}
		if m.CapturedAt != "2024-05-06T07:08:09" || m.CapturedAtOffset != "+02:00" {
			t.Errorf("captured %q %q", m.CapturedAt, m.CapturedAtOffset)
		}
		if m.GPSLatitude == nil || math.Abs(*m.GPSLatitude+33.8666667) > 1e-6 || math.Abs(*m.GPSLongitude+70.5) > 1e-6 {
			t.Errorf("GPS %v %v, want -33.8666667 -70.5", m.GPSLatitude, m.GPSLongitude)
		}
	})
	// A broken packet gives what was read before the break, and no panic.
	m := Metadata{}
	readXMP(&m, []byte(packet[:strings.Index(packet, "<aux:Lens>")+8]))
	if m.CameraMake != "Lightbox Camera Co." {
		t.Errorf("from half a packet: %+v", m)
	}
}
