package imaging

import (
	"context"
	"encoding/json"
	"errors"
	"math"
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
