package imaging

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"lightbox/xmp"
)

// Metadata is what the EXIF block says about the shot. Absent fields are
// zero (and omitted from JSON).
type Metadata struct {
	// CapturedAt is the local wall-clock time the shot was taken
	// (DateTimeOriginal, else DateTimeDigitized, else DateTime), as
	// "2006-01-02T15:04:05". Cameras record no time zone here.
	CapturedAt string `json:"capturedAt,omitempty"`
	// CapturedAtOffset is the UTC offset of CapturedAt ("+02:00") from
	// OffsetTimeOriginal, when the camera wrote it.
	CapturedAtOffset string  `json:"capturedAtOffset,omitempty"`
	CameraMake       string  `json:"cameraMake,omitempty"`
	CameraModel      string  `json:"cameraModel,omitempty"`
	LensModel        string  `json:"lensModel,omitempty"`
	FocalLengthMm    float64 `json:"focalLengthMm,omitempty"`
	// ShutterSpeed is the exposure time as photographers write it: "1/250",
	// "0.4", "8".
	ShutterSpeed    string  `json:"shutterSpeed,omitempty"`
	ExposureSeconds float64 `json:"exposureSeconds,omitempty"`
	// Aperture is the f-number (2.8 for f/2.8).
	Aperture float64 `json:"aperture,omitempty"`
	ISO      int     `json:"iso,omitempty"`
	// Orientation is the EXIF orientation, 1-8; 1 when absent.
	Orientation  int      `json:"orientation"`
	GPSLatitude  *float64 `json:"gpsLatitude,omitempty"`
	GPSLongitude *float64 `json:"gpsLongitude,omitempty"`
	// XMP is what the photo's own XMP packet says of it: the decisions an
	// editor wrote, keywords and captions (package xmp). Nil without a
	// packet, or when the packet was refused (MetadataWarning says why).
	XMP *xmp.Decisions `json:"xmp,omitempty"`
}

// CaptureTime returns CapturedAt as a time: at its recorded offset when there
// is one, else in loc (for example the project's time zone; nil means UTC).
func (m Metadata) CaptureTime(loc *time.Location) (time.Time, bool) {
	if m.CapturedAt == "" {
		return time.Time{}, false
	}
	if m.CapturedAtOffset != "" {
		if t, err := time.Parse("2006-01-02T15:04:05-07:00", m.CapturedAt+m.CapturedAtOffset); err == nil {
			return t, true
		}
	}
	if loc == nil {
		loc = time.UTC
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", m.CapturedAt, loc)
	return t, err == nil
}

// readMetadata parses the EXIF blocks inspect found, or the XMP packet of
// a file that has no EXIF (where both exist, EXIF is what cameras wrote;
// XMP is often an editor's copy). Any problem becomes
// the warning; it is never an error, because the pixels are what matter.
//
// The parser works on the bytes in memory and is bounded by construction:
// it visits each directory at most once, reads at most maxIFDs of them and
// never follows an offset outside the block, so a block whose directories
// point at each other ends at once with a warning instead of looping. It
// runs in the caller's goroutine, so nothing is left running when it
// returns.
func readMetadata(ctx context.Context, h header) (Metadata, string) {
	m := Metadata{Orientation: 1}
	if h.meta != nil {
		m = *h.meta
	}
	if (len(h.exif) == 0 && len(h.xmp) == 0) || ctx.Err() != nil {
		return m, ""
	}
	var warn []string
	func() {
		defer func() {
			// An index bug on hostile input must not take the worker down.
			if r := recover(); r != nil {
				warn = append(warn, fmt.Sprintf("metadata parser failed: %v", r))
			}
		}()
		if len(h.exif) > 0 {
			warn = parseExif(&m, h.exif, h.exifIFD)
		}
		if len(h.exif) == 0 && len(h.xmp) > 0 && len(h.xmp) <= xmp.MaxPacket {
			readXMP(&m, h.xmp)
		}
		if len(h.xmp) > 0 {
			d, warnings := readDecisions(h.xmp, h.xmpExt)
			m.XMP = d
			warn = append(warn, warnings...)
		}
	}()
	return m, strings.Join(warn, "; ")
}

// parseExif fills m from a TIFF-structured block (optionally after
// "Exif\0\0"). exifIFD, when not nil, is a separate TIFF block whose first
// directory is the Exif directory (CR3 keeps it apart from IFD0).
func parseExif(m *Metadata, block, exifIFD []byte) []string {
	t, first, err := newTIFFBlock(block)
	if err != nil {
		return []string{"EXIF block is unreadable: " + err.Error()}
	}
	ifd0 := t.ifd(first, "IFD0")
	// The directories after IFD0 (the EXIF thumbnail) are read only to
	// notice a broken chain, such as one that leads back to IFD0.
	for off, i := t.next(first), 1; off != 0; off, i = t.next(off), i+1 {
		if t.ifd(off, fmt.Sprintf("IFD%d", i)) == nil {
			break
		}
	}
	m.CameraMake = ifd0.str(t, 0x010F)
	m.CameraModel = ifd0.str(t, 0x0110)
	if v, ok := ifd0.uint(t, 0x0112); ok && v >= 1 && v <= 8 {
		m.Orientation = int(v)
	}
	ex, et := t.ifd(ifd0.offset(t, 0x8769), "Exif IFD"), t
	if exifIFD != nil {
		if t2, first2, err := newTIFFBlock(exifIFD); err == nil {
			ex, et = t2.ifd(first2, "Exif IFD"), t2
			defer func() { t.problems = append(t.problems, t2.problems...) }()
		}
	}
	m.LensModel = ex.str(et, 0xA434)
	if m.LensModel == "" && m.CameraMake == "Canon" {
		// Canon bodies older than the EXIF LensModel tag name the lens in
		// their maker note (tag 0x0095), an IFD with offsets into the block.
		m.LensModel = et.ifd(ex.offset(et, 0x927C), "Canon maker note").str(et, 0x0095)
	}
	m.FocalLengthMm = round(ex.rat(et, 0x920A, 0), 2)
	m.Aperture = round(ex.rat(et, 0x829D, 0), 2)
	if v, ok := ex.uint(et, 0x8827); ok && v > 0 {
		m.ISO = int(v)
	}
	if s := ex.rat(et, 0x829A, 0); s > 0 {
		m.ExposureSeconds = s
		m.ShutterSpeed = shutterSpeed(s)
	}
	dates := []struct {
		d    tiffDir
		t    *tiffBlock
		tag  uint16
		name string
	}{{ex, et, 0x9003, "DateTimeOriginal"}, {ex, et, 0x9004, "DateTimeDigitized"}, {ifd0, t, 0x0132, "DateTime"}}
	for _, d := range dates {
		s := d.d.str(d.t, d.tag)
		if s == "" {
			continue
		}
		at, err := time.Parse("2006:01:02 15:04:05", s)
		if err != nil {
			t.problem(fmt.Sprintf("EXIF %s %q is not a date", d.name, s))
			continue
		}
		m.CapturedAt = at.Format("2006-01-02T15:04:05")
		if d.tag == 0x9003 {
			if off := ex.str(et, 0x9011); validOffset(off) {
				m.CapturedAtOffset = off
			}
		}
		break
	}
	if gps := t.ifd(ifd0.offset(t, 0x8825), "GPS IFD"); gps != nil {
		lat, okLat := gps.coord(t, 1, 2)
		lon, okLon := gps.coord(t, 3, 4)
		switch {
		case !okLat || !okLon:
			if _, has := gps[2]; has {
				t.problem("EXIF GPS position is unreadable")
			}
		case math.Abs(lat) <= 90 && math.Abs(lon) <= 180 && !(lat == 0 && lon == 0):
			lat, lon = round(lat, 7), round(lon, 7)
			m.GPSLatitude, m.GPSLongitude = &lat, &lon
		}
	}
	return t.problems
}

func validOffset(s string) bool {
	_, err := time.Parse("-07:00", s)
	return err == nil
}

// shutterSpeed writes an exposure time the way cameras show it: fractions
// of a second up to 1/4, decimals above.
func shutterSpeed(sec float64) string {
	if sec <= 0.25 {
		d := 1 / sec
		if d >= 10 || d == math.Round(d) {
			return "1/" + strconv.FormatFloat(math.Round(d), 'f', -1, 64)
		}
		return "1/" + strconv.FormatFloat(round(d, 1), 'f', -1, 64)
	}
	return strconv.FormatFloat(round(sec, 1), 'f', -1, 64)
}

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}
