package imaging

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rwcarlsen/goexif/exif"
	"github.com/rwcarlsen/goexif/tiff"
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

// exifTimeout bounds EXIF parsing. The block is at most 64 KiB in a JPEG,
// so this only matters for a parser bug that loops.
const exifTimeout = 2 * time.Second

// readMetadata parses h.exif. Any problem becomes the warning; it is never
// an error, because the pixels are what matter.
func readMetadata(ctx context.Context, h header) (Metadata, string) {
	m := Metadata{Orientation: 1}
	if len(h.exif) == 0 {
		return m, ""
	}
	type parsed struct {
		m    Metadata
		warn []string
	}
	done := make(chan parsed, 1)
	go func() {
		var p parsed
		defer func() {
			// goexif has panicked on hostile input before; a panic here
			// must not take the worker down.
			if r := recover(); r != nil {
				p.warn = append(p.warn, fmt.Sprintf("EXIF parser failed: %v", r))
			}
			done <- p
		}()
		p.m, p.warn = parseExif(h.exif)
	}()
	ctx, cancel := context.WithTimeout(ctx, exifTimeout)
	defer cancel()
	select {
	case p := <-done:
		return p.m, strings.Join(p.warn, "; ")
	case <-ctx.Done():
		// The goroutine is left to finish on its own; it holds only the block.
		return m, "EXIF block not read: parsing took too long"
	}
}

func parseExif(block []byte) (Metadata, []string) {
	m := Metadata{Orientation: 1}
	var warn []string
	x, err := exif.Decode(bytes.NewReader(block))
	if x == nil {
		return m, []string{"EXIF block is unreadable: " + strings.TrimSpace(err.Error())}
	}
	if err != nil {
		// Some sub-directories failed; what was read is still good.
		warn = append(warn, "EXIF block is partly unreadable: "+strings.TrimSpace(err.Error()))
	}

	m.CameraMake = exifString(x, exif.Make)
	m.CameraModel = exifString(x, exif.Model)
	m.LensModel = exifString(x, exif.LensModel)
	if m.LensModel == "" {
		m.LensModel = canonLens(x, m.CameraMake)
	}
	m.FocalLengthMm = round(exifRat(x, exif.FocalLength), 2)
	m.Aperture = round(exifRat(x, exif.FNumber), 2)
	if t, err := x.Get(exif.ISOSpeedRatings); err == nil {
		if v, err := t.Int(0); err == nil && v > 0 {
			m.ISO = v
		}
	}
	if t, err := x.Get(exif.ExposureTime); err == nil {
		if num, den, err := t.Rat2(0); err == nil && num > 0 && den > 0 {
			m.ExposureSeconds = float64(num) / float64(den)
			m.ShutterSpeed = shutterSpeed(m.ExposureSeconds)
		}
	}
	if t, err := x.Get(exif.Orientation); err == nil {
		if v, err := t.Int(0); err == nil && v >= 1 && v <= 8 {
			m.Orientation = v
		}
	}
	for _, name := range []exif.FieldName{exif.DateTimeOriginal, exif.DateTimeDigitized, exif.DateTime} {
		s := exifString(x, name)
		if s == "" {
			continue
		}
		t, err := time.Parse("2006:01:02 15:04:05", s)
		if err != nil {
			warn = append(warn, fmt.Sprintf("EXIF %s %q is not a date", name, s))
			continue
		}
		m.CapturedAt = t.Format("2006-01-02T15:04:05")
		if name == exif.DateTimeOriginal {
			m.CapturedAtOffset = offsetTimeOriginal(x)
		}
		break
	}
	if _, err := x.Get(exif.GPSLatitude); err == nil {
		lat, lon, err := x.LatLong()
		switch {
		case err != nil:
			warn = append(warn, "EXIF GPS position is unreadable: "+err.Error())
		case math.Abs(lat) <= 90 && math.Abs(lon) <= 180 && !(lat == 0 && lon == 0):
			lat, lon = round(lat, 7), round(lon, 7)
			m.GPSLatitude, m.GPSLongitude = &lat, &lon
		}
	}
	return m, warn
}

func exifString(x *exif.Exif, name exif.FieldName) string {
	t, err := x.Get(name)
	if err != nil || t.Format() != tiff.StringVal {
		return ""
	}
	s, err := t.StringVal()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.TrimRight(s, "\x00"))
}

func exifRat(x *exif.Exif, name exif.FieldName) float64 {
	t, err := x.Get(name)
	if err != nil {
		return 0
	}
	num, den, err := t.Rat2(0)
	if err != nil || den == 0 || num <= 0 {
		return 0
	}
	return float64(num) / float64(den)
}

// offsetTimeOriginal reads tag 0x9011 from the Exif sub-IFD: goexif only
// keeps the tags it names, and this one came with EXIF 2.31.
func offsetTimeOriginal(x *exif.Exif) string {
	t, err := x.Get(exif.ExifIFDPointer)
	if err != nil {
		return ""
	}
	off, err := t.Int64(0)
	if err != nil {
		return ""
	}
	s := dirString(x, off, 0x9011)
	if _, err := time.Parse("-07:00", s); err != nil {
		return ""
	}
	return s
}

// canonLens reads the lens name from a Canon maker note (tag 0x0095), where
// Canon bodies older than the EXIF LensModel tag record it. goexif's own
// maker note parser is not used because its field names collide with the
// standard ones (FocalLength).
func canonLens(x *exif.Exif, make string) string {
	if make != "Canon" {
		return ""
	}
	t, err := x.Get(exif.MakerNote)
	if err != nil {
		return ""
	}
	return dirString(x, int64(t.ValOffset), 0x0095)
}

// dirString returns the string tag id of the IFD at offset off of the EXIF
// block, or "".
func dirString(x *exif.Exif, off int64, id uint16) string {
	if off <= 0 || off >= int64(len(x.Raw)) {
		return ""
	}
	r := bytes.NewReader(x.Raw)
	if _, err := r.Seek(off, 0); err != nil {
		return ""
	}
	dir, _, err := tiff.DecodeDir(r, x.Tiff.Order)
	if err != nil {
		return ""
	}
	for _, tag := range dir.Tags {
		if tag.Id == id && tag.Format() == tiff.StringVal {
			s, _ := tag.StringVal()
			return strings.TrimSpace(strings.TrimRight(s, "\x00"))
		}
	}
	return ""
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
