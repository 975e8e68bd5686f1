package imaging

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/color"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/image/tiff"

	"lightbox/testsupport/testenv"
)

// needExiftool fails the test when exiftool, which writes the packets the
// tests read, is missing.
func needExiftool(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("exiftool"); err != nil {
		t.Fatal("exiftool is not installed (libimage-exiftool-perl; make test installs it)")
	}
}

// exiftool runs exiftool quietly, failing the test on an error.
func exiftool(t *testing.T, args ...string) {
	t.Helper()
	// -m: some stubs and corpus packets have minor faults exiftool
	// would otherwise refuse to edit around.
	cmd := exec.Command("exiftool", append([]string{"-q", "-m"}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("exiftool %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

// inspectFile reads what inspect and readMetadata make of the file at path,
// as ingest does before decoding.
func inspectFile(t *testing.T, path string) (header, Metadata, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := inspect(data, Config{}.withDefaults())
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	m, warn := readMetadata(context.Background(), h)
	return h, m, warn
}

// A packet exiftool writes into each container Lightbox takes reaches the
// photo's decisions, beside the EXIF; a packet that is not well-formed
// leaves the photo as if it had none, with a warning.
func TestXMPFromEveryContainer(t *testing.T) {
	needExiftool(t)
	dir := t.TempDir()
	// The shared files hold no TIFF: Go's encoder makes one.
	tif := filepath.Join(dir, "plain.tif")
	img := image.NewGray(image.Rect(0, 0, 16, 16))
	for i := range img.Pix {
		img.Pix[i] = uint8(i)
	}
	img.Set(0, 0, color.Gray{Y: 255})
	var buf bytes.Buffer
	if err := tiff.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tif, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	formatsDir := testenv.Formats(t)
	cases := []struct{ file, make string }{
		{tif, ""},
		{filepath.Join(formatsDir, "raw/canon550d-magiclantern-14bit-uncompressed.dng"), "Canon"},
		{filepath.Join(formatsDir, "raw/stubs/nikon-d70-stub.nef"), "NIKON CORPORATION"},
		{filepath.Join(formatsDir, "raw/stubs/canon-350d-stub.cr2"), "Canon"},
		{filepath.Join(formatsDir, "raw/stubs/panasonic-lx3-stub.rw2"), "Panasonic"},
		{filepath.Join(formatsDir, "raw/stubs/fuji-s5pro-stub.raf"), "FUJIFILM"},
		{filepath.Join(formatsDir, "raw/stubs/canon-m50-stub.cr3"), "Canon"},
		{filepath.Join(formatsDir, "heic/iphone8plus-grid-orientation6-p3.heic"), "Apple"},
		{filepath.Join(formatsDir, "heic/synthetic-rgba-alpha-128x128.heif"), ""}, // no packet before
		{filepath.Join(formatsDir, "avif/pixel4a-paris-icc-exif-xmp.avif"), "Google"},
	}
	out := filepath.Join(dir, "out")
	args := []string{"-o", out + "/%f.%e", "-XMP-xmp:Rating=4", "-XMP-xmp:Label=Red",
		"-XMP-dc:Subject=alpha", "-XMP-dc:Subject=beta", "-XMP-dc:Title=Dawn"}
	for _, c := range cases {
		args = append(args, c.file)
	}
	exiftool(t, args...) // one run: exiftool starts slowly
	for _, c := range cases {
		name := filepath.Base(c.file)
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(out, name)
			h, m, warn := inspectFile(t, path)
			d := m.XMP
			if d == nil || d.Rating != 4 || d.ColorLabel != "red" || strings.Join(d.Keywords, ",") != "alpha,beta" || d.IPTC.Title != "Dawn" {
				t.Fatalf("read %+v (warning %q)", d, warn)
			}
			if strings.Contains(warn, "XMP") {
				t.Errorf("warning %q", warn)
			}
			if m.CameraMake != c.make {
				t.Errorf("camera make %q, want %q from the EXIF", m.CameraMake, c.make)
			}

			// The same packet, no longer well-formed: a DOCTYPE in place of
			// its root element, the file's length unchanged.
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.Index(data, []byte("<x:xmpmeta"))
			if i < 0 || !bytes.Contains(h.xmp, []byte("<x:xmpmeta")) {
				t.Fatal("no x:xmpmeta in the packet")
			}
			copy(data[i:], "<!DOCTYPE ")
			h, err = inspect(data, Config{}.withDefaults())
			if err != nil {
				t.Fatalf("inspect of the broken packet: %v", err)
			}
			m, warn = readMetadata(context.Background(), h)
			if m.XMP != nil || !strings.Contains(warn, "XMP packet ignored") || m.CameraMake != c.make {
				t.Fatalf("broken packet: read %+v, camera %q, warning %q", m.XMP, m.CameraMake, warn)
			}
		})
	}
}

// A packet too large for one JPEG segment is split by exiftool into
// extended XMP; what lands in the extension is read, and an extension
// that cannot be put together is ignored with a warning, the main
// packet's decisions kept.
func TestExtendedXMP(t *testing.T) {
	needExiftool(t)
	dir := t.TempDir()
	desc := strings.TrimSpace(strings.Repeat("a long caption, ", 5000)) // 80,000 bytes
	descFile := filepath.Join(dir, "desc.txt")
	if err := os.WriteFile(descFile, []byte(desc), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "ext.jpg")
	exiftool(t, "-o", out, "-XMP-xmp:Rating=3", "-XMP-xmp:Label=Green", "-XMP-dc:Subject=kite",
		"-XMP-dc:Description<="+descFile, filepath.Join(corpusDir(t), "photos", "blinds.jpg"))
	h, m, warn := inspectFile(t, out)
	if len(h.xmpExt) < 2 || bytes.Contains(h.xmp, []byte("a long caption")) {
		t.Fatalf("exiftool kept the caption in the main packet (%d extension segments)", len(h.xmpExt))
	}
	d := m.XMP
	if d == nil || d.Rating != 3 || d.ColorLabel != "green" || strings.Join(d.Keywords, ",") != "kite" || d.IPTC.Description != desc {
		t.Fatalf("read %+v (warning %q)", d, warn)
	}
	if warn != "" {
		t.Errorf("warning %q", warn)
	}

	lying := append([]byte{}, h.xmpExt[0]...)
	binary.BigEndian.PutUint32(lying[32:], 1<<30)
	beyond := append([]byte{}, h.xmpExt[1]...)
	binary.BigEndian.PutUint32(beyond[36:], binary.BigEndian.Uint32(beyond[32:])-10)
	for _, c := range []struct {
		name    string
		segs    [][]byte
		warning string
	}{
		{"a segment missing", h.xmpExt[1:], "missing"},
		{"a length of 1 GiB", append([][]byte{lying}, h.xmpExt[1:]...), "1073741824"},
		{"a segment past the end", append([][]byte{h.xmpExt[0]}, beyond), "outside"},
		{"a segment too short", [][]byte{h.xmpExt[0][:39]}, ""}, // no GUID: as if absent
	} {
		b := h
		b.xmpExt = c.segs
		m, warn := readMetadata(context.Background(), b)
		if m.XMP == nil || m.XMP.Rating != 3 || m.XMP.IPTC.Description != "" {
			t.Errorf("%s: read %+v", c.name, m.XMP)
		}
		switch {
		case c.warning == "" && warn != "":
			t.Errorf("%s: warning %q, want none", c.name, warn)
		case c.warning != "" && (!strings.Contains(warn, "extended XMP packet ignored: ") || !strings.Contains(warn, c.warning)):
			t.Errorf("%s: warning %q, want one naming %q", c.name, warn, c.warning)
		}
	}
}

// The fuzz seeds reach every packet reader: each gives the packet's
// decisions, the JPEG's with its extension's.
func TestXMPSeedsHoldPackets(t *testing.T) {
	for name, data := range xmpSeeds() {
		h, err := inspect(data, Config{}.withDefaults())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m, warn := readMetadata(context.Background(), h)
		if m.XMP == nil || m.XMP.Rating != 2 || warn != "" {
			t.Errorf("%s: read %+v (warning %q)", name, m.XMP, warn)
		}
		if name == "jpeg-extended" && (m.XMP == nil || m.XMP.IPTC.City != "Porto") {
			t.Errorf("%s: the extension was not read: %+v", name, m.XMP)
		}
	}
}
