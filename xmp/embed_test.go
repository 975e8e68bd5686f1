package xmp_test

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"lightbox/xmp"
)

const (
	photos = "/work/shared/corpus/photos"
	raws   = "/work/shared/formats/raw"
)

// embedded are decisions every embedding test writes and exiftool reads.
var embedded = xmp.Decisions{Rating: 4, ColorLabel: "green", Keywords: []string{"dusk", "city"},
	IPTC: xmp.IPTC{Title: "Darkest hour", Creator: "Ana Lima"}}

// embedTwice embeds into orig a packet merged into the one it came with,
// then, over that, one holding embedded, as a second edit does.
func embedTwice(t *testing.T, original string, orig []byte, embed func(photo, packet []byte) ([]byte, error)) []byte {
	t.Helper()
	need(t, "exiftool", "libimage-exiftool-perl")
	existing, err := exec.Command("exiftool", "-b", "-XMP", original).Output()
	if err != nil {
		t.Fatal(err)
	}
	out := orig
	for _, d := range []xmp.Decisions{{Rejected: true, Keywords: []string{"first"}}, embedded} {
		packet, err := xmp.Write(existing, d, xmp.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out, err = embed(out, packet); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkEmbedded fails unless exiftool reads embedded from file, with no
// warning the original did not have.
func checkEmbedded(t *testing.T, original, file string) {
	t.Helper()
	tags := exiftool(t, file)
	for k, v := range map[string]any{"XMP-xmp:Rating": 4.0, "XMP-xmp:Label": "Green", "XMP-dc:Subject": []any{"dusk", "city"},
		"XMP-dc:Title": "Darkest hour", "XMP-dc:Creator": []any{"Ana Lima"}} {
		if !reflect.DeepEqual(tags[k], v) {
			t.Errorf("%s: %s = %#v, want %#v", filepath.Base(file), k, tags[k], v)
		}
	}
	ws := warnings(t, original, file)
	for _, w := range ws[1] {
		if !slices.Contains(ws[0], w) {
			t.Errorf("%s: exiftool -validate: %s", filepath.Base(file), w)
		}
	}
}

// warnings returns what exiftool -validate says of each file, in one
// run: exiftool is slow to start.
func warnings(t *testing.T, files ...string) [][]string {
	t.Helper()
	need(t, "exiftool", "libimage-exiftool-perl")
	out, err := exec.Command("exiftool", append([]string{"-validate", "-warning", "-error", "-a", "-s3"}, files...)...).Output()
	if err != nil {
		t.Fatalf("exiftool -validate %v: %v", files, err)
	}
	ws := make([][]string, len(files))
	i := 0
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case strings.HasPrefix(l, "======== "):
			i = slices.Index(files, strings.TrimPrefix(l, "======== "))
		case l != "" && !strings.Contains(l, " Warning") && l != "OK" && !strings.Contains(l, "image files read"):
			ws[i] = append(ws[i], l)
		}
	}
	return ws
}

// jpegSegments returns the markers and bodies of the segments before the
// first scan, and where the scan's SOS marker is.
func jpegSegments(t *testing.T, b []byte) (markers []byte, bodies [][]byte, sos int) {
	t.Helper()
	for i := 2; i+4 <= len(b); {
		if b[i] != 0xFF {
			t.Fatalf("no marker at %d", i)
		}
		if b[i+1] == 0xDA {
			return markers, bodies, i
		}
		end := i + 2 + int(binary.BigEndian.Uint16(b[i+2:]))
		markers, bodies = append(markers, b[i+1]), append(bodies, b[i+4:end])
		i = end
	}
	t.Fatal("no SOS")
	return nil, nil, 0
}

// xmpSegments counts the XMP and extended-XMP segments.
func xmpSegments(t *testing.T, b []byte) (n int) {
	markers, bodies, _ := jpegSegments(t, b)
	for i, m := range markers {
		if m == 0xE1 && (bytes.HasPrefix(bodies[i], []byte("http://ns.adobe.com/xap/1.0/\x00")) ||
			bytes.HasPrefix(bodies[i], []byte("http://ns.adobe.com/xmp/extension/\x00"))) {
			n++
		}
	}
	return n
}

// pixels decodes a JPEG with image/jpeg.
func pixels(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// vipsPixels has vips decode file to raw pixels.
func vipsPixels(t *testing.T, file string) []byte {
	t.Helper()
	need(t, "vips", "libvips-tools")
	raw := filepath.Join(t.TempDir(), filepath.Base(file)+".raw")
	if out, err := exec.Command("vips", "rawsave", file, raw).CombinedOutput(); err != nil {
		t.Fatalf("vips copy %s: %v\n%s", file, err, out)
	}
	b, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEmbedJPEG(t *testing.T) {
	for _, name := range []string{"darkesthour-2560x1600.jpg", "elephants-3840x2160-progressive.jpg"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			original := filepath.Join(photos, name)
			orig, err := os.ReadFile(original)
			if err != nil {
				t.Fatal(err)
			}
			_, _, sos := jpegSegments(t, orig)
			out := embedTwice(t, original, orig, xmp.EmbedJPEG)
			if n := xmpSegments(t, out); n != 1 {
				t.Errorf("%d XMP segments", n)
			}
			_, _, outSOS := jpegSegments(t, out)
			if !bytes.Equal(out[outSOS:], orig[sos:]) {
				t.Error("the scan data changed")
			}
			file := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(file, out, 0o644); err != nil {
				t.Fatal(err)
			}
			checkEmbedded(t, original, file)
			if strings.Contains(name, "progressive") {
				return // the same scan bytes; decoding it again would only be slow
			}
			if !bytes.Equal(vipsPixels(t, file), vipsPixels(t, original)) {
				t.Error("vips decodes other pixels")
			}
			if !reflect.DeepEqual(pixels(t, out), pixels(t, orig)) {
				t.Error("image/jpeg decodes other pixels")
			}
		})
	}
}

// Extended-XMP segments go with the packet they extend; a packet too big
// for a segment, or a file that is no JPEG, is an error.
func TestEmbedJPEGEdges(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(photos, "darkesthour-2560x1600.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	ext := append([]byte("http://ns.adobe.com/xmp/extension/\x00"), make([]byte, 40)...)
	seg := binary.BigEndian.AppendUint16([]byte{0xFF, 0xE1}, uint16(2+len(ext)))
	withExt := slices.Concat(orig[:2], seg, ext, orig[2:])
	if n := xmpSegments(t, withExt); n < 2 {
		t.Fatalf("%d XMP segments to start with", n)
	}
	out, err := xmp.EmbedJPEG(withExt, []byte("<x/>"))
	if err != nil {
		t.Fatal(err)
	}
	if n := xmpSegments(t, out); n != 1 {
		t.Errorf("%d XMP segments, want 1", n)
	}
	if _, err := xmp.EmbedJPEG(orig, make([]byte, xmp.MaxJPEGPacket)); err != nil {
		t.Errorf("a packet of %d bytes: %v", xmp.MaxJPEGPacket, err)
	}
	if _, err := xmp.EmbedJPEG(orig, make([]byte, xmp.MaxJPEGPacket+1)); err == nil || !strings.Contains(err.Error(), "65502") {
		t.Errorf("a packet of %d bytes: %v", xmp.MaxJPEGPacket+1, err)
	}
	for _, bad := range [][]byte{nil, []byte("GIF89a"), orig[:1000]} {
		if _, err := xmp.EmbedJPEG(bad, []byte("<x/>")); err == nil {
			t.Errorf("%q... embedded", bad[:min(len(bad), 6)])
		}
	}
}

// imageData returns the strips or tiles exiftool finds in each IFD of a TIFF.
func imageData(t *testing.T, file string, b []byte) [][]byte {
	t.Helper()
	tags := exiftool(t, file, "-a", "-StripOffsets", "-StripByteCounts", "-TileOffsets", "-TileByteCounts")
	var data [][]byte
	for k, v := range tags {
		group, name, _ := strings.Cut(k, ":")
		if name != "StripOffsets" && name != "TileOffsets" {
			continue
		}
		counts := tags[group+":"+strings.Replace(name, "Offsets", "ByteCounts", 1)]
		offs, ns := numbers(v), numbers(counts)
		if len(offs) == 0 || len(offs) != len(ns) {
			t.Fatalf("%s: %v offsets, %v counts", k, v, counts)
		}
		for i := range offs {
			data = append(data, b[offs[i]:offs[i]+ns[i]])
		}
	}
	if len(data) == 0 {
		t.Fatalf("%s: no strips or tiles", file)
	}
	return data
}

// numbers reads exiftool's number or space-separated numbers.
func numbers(v any) []int {
	switch v := v.(type) {
	case float64:
		return []int{int(v)}
	case string:
		var ns []int
		for _, f := range strings.Fields(v) {
			n := 0
			for _, c := range f {
				n = n*10 + int(c-'0')
			}
			ns = append(ns, n)
		}
		return ns
	}
	return nil
}

func TestEmbedTIFF(t *testing.T) {
	need(t, "vips", "libvips-tools")
	dir := t.TempDir()
	tif := filepath.Join(dir, "darkesthour.tif")
	if out, err := exec.Command("vips", "copy", filepath.Join(photos, "darkesthour-2560x1600.jpg[shrink=8]"), tif).CombinedOutput(); err != nil {
		t.Fatalf("vips copy: %v\n%s", err, out)
	}
	files := []string{tif}
	if dngs, _ := filepath.Glob(filepath.Join(raws, "*.dng")); len(dngs) > 0 {
		files = append(files, dngs[0])
	}
	for _, original := range files {
		t.Run(filepath.Base(original), func(t *testing.T) {
			t.Parallel()
			orig, err := os.ReadFile(original)
			if err != nil {
				t.Fatal(err)
			}
			out := embedTwice(t, original, orig, xmp.EmbedTIFF)
			file := filepath.Join(t.TempDir(), filepath.Base(original))
			if err := os.WriteFile(file, out, 0o644); err != nil {
				t.Fatal(err)
			}
			checkEmbedded(t, original, file)
			if !reflect.DeepEqual(imageData(t, file, out), imageData(t, original, orig)) {
				t.Error("the image data changed")
			}
			if !bytes.Equal(out[8:len(orig)], orig[8:]) {
				t.Error("bytes of the original file changed")
			}
			// Embedding over an embedded packet does not grow the file.
			p := []byte(`<x:xmpmeta xmlns:x="adobe:ns:meta/"/>`)
			if a, err := xmp.EmbedTIFF(out, p); err != nil {
				t.Error(err)
			} else if b, err := xmp.EmbedTIFF(a, p); err != nil || !bytes.Equal(a, b) || len(b) > len(orig)+1+2+12*200+4+len(p) {
				t.Errorf("embedding again: %v, %d bytes then %d", err, len(a), len(b))
			}
			if strings.HasSuffix(original, ".tif") {
				if b, err := exec.Command("vipsheader", file).CombinedOutput(); err != nil || bytes.Contains(b, []byte("rror")) {
					t.Errorf("vipsheader: %v\n%s", err, b)
				}
				if !bytes.Equal(vipsPixels(t, file), vipsPixels(t, original)) {
					t.Error("vips decodes other pixels")
				}
			}
		})
	}
	for _, bad := range [][]byte{nil, []byte("II*\x00\xff\xff\xff\x00"), []byte("II+\x00\x08\x00\x00\x00"), []byte("PK\x03\x04abcd")} {
		if _, err := xmp.EmbedTIFF(bad, []byte("<x/>")); err == nil {
			t.Errorf("%q embedded", bad)
		}
	}
}

// Whatever the file, embedding fails or gives a file that holds the packet.
func FuzzEmbed(f *testing.F) {
	f.Add([]byte("\xff\xd8\xff\xe0\x00\x04ab\xff\xda\x00\x02\xff\xd9"))
	f.Add([]byte("II*\x00\x08\x00\x00\x00\x01\x00\xbc\x02\x01\x00\x05\x00\x00\x00\x1a\x00\x00\x00\x00\x00\x00\x00<x/>!"))
	f.Add([]byte("MM\x00*\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00"))
	packet := []byte("<x:xmpmeta/>")
	f.Fuzz(func(t *testing.T, file []byte) {
		for _, embed := range []func(photo, packet []byte) ([]byte, error){xmp.EmbedJPEG, xmp.EmbedTIFF} {
			if out, err := embed(file, packet); err == nil && !bytes.Contains(out, packet) {
				t.Fatal("no packet in the file")
			}
		}
	})
}
