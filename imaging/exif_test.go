package imaging

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/draw"
	"math"
	"testing"
	"time"
)

// No corpus photo has OffsetTimeOriginal, southern or western GPS, or a
// turned orientation with camera EXIF, so this test writes a JPEG with an
// EXIF block of its own.

type tiffEntry struct {
	tag, typ uint16
	count    uint32
	val      []byte
}

const (
	tASCII    = 2
	tShort    = 3
	tLong     = 4
	tRational = 5
)

func asciiEntry(tag uint16, s string) tiffEntry {
	return tiffEntry{tag, tASCII, uint32(len(s) + 1), append([]byte(s), 0)}
}

func shortEntry(tag uint16, v uint16) tiffEntry {
	return tiffEntry{tag, tShort, 1, binary.BigEndian.AppendUint16(nil, v)}
}

func longEntry(tag uint16, v uint32) tiffEntry {
	return tiffEntry{tag, tLong, 1, binary.BigEndian.AppendUint32(nil, v)}
}

func ratEntry(tag uint16, pairs ...uint32) tiffEntry {
	var b []byte
	for _, p := range pairs {
		b = binary.BigEndian.AppendUint32(b, p)
	}
	return tiffEntry{tag, tRational, uint32(len(pairs) / 2), b}
}

// encodeIFD writes a big-endian IFD that starts at offset base of the TIFF
// data, with values longer than 4 bytes after it.
func encodeIFD(base int, entries []tiffEntry) []byte {
	data := base + 2 + 12*len(entries) + 4
	var ifd, extra []byte
	ifd = binary.BigEndian.AppendUint16(ifd, uint16(len(entries)))
	for _, e := range entries {
		ifd = binary.BigEndian.AppendUint16(ifd, e.tag)
		ifd = binary.BigEndian.AppendUint16(ifd, e.typ)
		ifd = binary.BigEndian.AppendUint32(ifd, e.count)
		if len(e.val) <= 4 {
			ifd = append(ifd, append(e.val, make([]byte, 4-len(e.val))...)...)
			continue
		}
		ifd = binary.BigEndian.AppendUint32(ifd, uint32(data+len(extra)))
		extra = append(extra, e.val...)
		if len(extra)%2 == 1 {
			extra = append(extra, 0)
		}
	}
	ifd = binary.BigEndian.AppendUint32(ifd, 0)
	return append(ifd, extra...)
}

func exifBlock() []byte {
	ifd0 := func(exifAt, gpsAt uint32) []tiffEntry {
		return []tiffEntry{
			asciiEntry(0x010F, "Lightbox Camera Co."),
			asciiEntry(0x0110, "LB-1"),
			shortEntry(0x0112, 6), // stored turned left
			longEntry(0x8769, exifAt),
			longEntry(0x8825, gpsAt),
		}
	}
	exifIFD := []tiffEntry{
		ratEntry(0x829A, 1, 250), // ExposureTime
		ratEntry(0x829D, 28, 10), // FNumber
		shortEntry(0x8827, 800),  // ISO
		asciiEntry(0x9003, "2024:05:06 07:08:09"),
		asciiEntry(0x9011, "+02:00"), // OffsetTimeOriginal
		ratEntry(0x920A, 35, 1),      // FocalLength
		asciiEntry(0xA434, "LB 35mm F2.8"),
	}
	gpsIFD := []tiffEntry{
		asciiEntry(1, "S"),
		ratEntry(2, 33, 1, 52, 1, 0, 1),
		asciiEntry(3, "W"),
		ratEntry(4, 70, 1, 30, 1, 0, 1),
	}
	size0 := len(encodeIFD(8, ifd0(0, 0)))
	exifAt := 8 + size0
	gpsAt := exifAt + len(encodeIFD(exifAt, exifIFD))
	tiff := []byte("MM\x00*\x00\x00\x00\x08")
	tiff = append(tiff, encodeIFD(8, ifd0(uint32(exifAt), uint32(gpsAt)))...)
	tiff = append(tiff, encodeIFD(exifAt, exifIFD)...)
	tiff = append(tiff, encodeIFD(gpsAt, gpsIFD)...)
	return tiff
}

// exifJPEG is a 30×20 JPEG, red on the left and blue on the right, stored
// with orientation 6: upright it is 20×30, red on top.
func exifJPEG(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 30, 20))
	draw.Draw(img, image.Rect(0, 0, 15, 20), image.NewUniform(color.RGBA{220, 20, 20, 255}), image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(15, 0, 30, 20), image.NewUniform(color.RGBA{20, 20, 220, 255}), image.Point{}, draw.Src)
	plain, err := encodeJPEG(img, 95)
	if err != nil {
		t.Fatal(err)
	}
	seg := append([]byte("Exif\x00\x00"), exifBlock()...)
	var out bytes.Buffer
	out.Write(plain[:2]) // SOI
	out.Write([]byte{0xFF, 0xE1})
	out.Write(binary.BigEndian.AppendUint16(nil, uint16(len(seg)+2)))
	out.Write(seg)
	out.Write(plain[2:])
	return out.Bytes()
}

func TestExifFields(t *testing.T) {
	data := exifJPEG(t)
	forEachEngine(t, func(t *testing.T, e Engine) {
		r := mustProcess(t, e, data)
		m := r.Metadata
		if r.MetadataWarning != "" {
			t.Errorf("warning %q", r.MetadataWarning)
		}
		want := Metadata{CapturedAt: "2024-05-06T07:08:09", CapturedAtOffset: "+02:00", CameraMake: "Lightbox Camera Co.",
			CameraModel: "LB-1", LensModel: "LB 35mm F2.8", FocalLengthMm: 35, ShutterSpeed: "1/250", ExposureSeconds: 0.004,
			Aperture: 2.8, ISO: 800, Orientation: 6}
		gotPlain := m
		gotPlain.GPSLatitude, gotPlain.GPSLongitude = nil, nil
		if gotPlain != want {
			t.Errorf("metadata\n got %+v\nwant %+v", gotPlain, want)
		}
		if m.GPSLatitude == nil || math.Abs(*m.GPSLatitude+33.8666667) > 1e-6 || math.Abs(*m.GPSLongitude+70.5) > 1e-6 {
			t.Errorf("GPS %v %v, want -33.8666667 -70.5", m.GPSLatitude, m.GPSLongitude)
		}
		at, ok := m.CaptureTime(time.UTC)
		if !ok || !at.Equal(time.Date(2024, 5, 6, 5, 8, 9, 0, time.UTC)) {
			t.Errorf("CaptureTime %v %v, want 05:08:09 UTC", at, ok)
		}

		if r.Width != 20 || r.Height != 30 {
			t.Fatalf("oriented size %d×%d, want 20×30", r.Width, r.Height)
		}
		thumb := decodeJPEG(t, r.Thumbnail.Data)
		top, bottom := thumb.At(10, 5).(color.YCbCr), thumb.At(10, 25).(color.YCbCr)
		if top.Cr < 160 || bottom.Cb < 160 {
			t.Errorf("after turning, top is %v and bottom %v; want red over blue", top, bottom)
		}
	})
}

func TestCaptureTimeWithoutOffset(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	m := Metadata{CapturedAt: "2015-06-21T02:05:56"}
	at, ok := m.CaptureTime(tokyo)
	if !ok || !at.Equal(time.Date(2015, 6, 20, 17, 5, 56, 0, time.UTC)) {
		t.Errorf("got %v %v", at, ok)
	}
	if _, ok := (Metadata{}).CaptureTime(nil); ok {
		t.Error("no capture time gave a time")
	}
}
