package imaging

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// withXMP returns jpeg with packet in an APP1 segment right after SOI.
func withXMP(jpeg []byte, packet string) []byte {
	seg := append(append([]byte{}, xmpPrefix...), packet...)
	out := append([]byte{}, jpeg[:2]...)
	out = append(out, 0xFF, 0xE1)
	out = binary.BigEndian.AppendUint16(out, uint16(len(seg)+2))
	out = append(out, seg...)
	return append(out, jpeg[2:]...)
}

// A photo's own packet reaches its metadata: what exiftool embeds, as
// cameras' companion apps and editors do; a refused packet leaves the
// photo processed, with a warning that says why.
func TestProcessReadsTheEmbeddedXMPPacket(t *testing.T) {
	if _, err := exec.LookPath("exiftool"); err != nil {
		t.Fatal("exiftool is not installed (libimage-exiftool-perl; make test installs it)")
	}
	e, err := New(EngineVips, Config{})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(corpusDir(t), "photos", "kite-2560x1600.jpg")
	out := filepath.Join(t.TempDir(), "kite.jpg")
	// -m: the corpus photo's own packet has an empty list exiftool
	// would otherwise refuse to edit around.
	cmd := exec.Command("exiftool", "-q", "-m", "-o", out, "-XMP-xmp:Rating=4", "-XMP-xmp:Label=Red",
		"-XMP-dc:Subject=kite", "-XMP-dc:Subject=beach", "-XMP-photoshop:City=Lisbon", src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("exiftool: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Process(context.Background(), data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Metadata.XMP
	if d == nil || d.Rating != 4 || d.ColorLabel != "red" || strings.Join(d.Keywords, ",") != "kite,beach" || d.IPTC.City != "Lisbon" {
		t.Fatalf("read %+v (warning %q)", d, res.MetadataWarning)
	}
	if res.Metadata.CameraModel == "" {
		t.Fatal("the EXIF beside the packet was lost")
	}

	plain := readCorpus(t, "photos/kite-2560x1600.jpg")
	for _, c := range []struct{ name, packet, warning string }{
		{"entity expansion", `<!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><x:xmpmeta xmlns:x="adobe:ns:meta/">&b;</x:xmpmeta>`, "DOCTYPE"},
		{"nested deep", strings.Repeat("<a>", 9000) + strings.Repeat("</a>", 9000), "deep"}, // as deep as one JPEG segment holds
		{"invalid UTF-8", `<x:xmpmeta xmlns:x="adobe:ns:meta/">` + "\xff\xfe" + `</x:xmpmeta>`, "UTF-8"},
		{"rating of 9", `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:Rating="9" xmp:Label="Blue"/></rdf:RDF></x:xmpmeta>`, "xmp:Rating"},
	} {
		res, err := e.Process(context.Background(), withXMP(plain, c.packet), Options{})
		if err != nil {
			t.Fatalf("%s: the photo failed: %v", c.name, err)
		}
		if !strings.Contains(res.MetadataWarning, c.warning) || res.Thumbnail.Width == 0 {
			t.Fatalf("%s: warning %q, want one naming %q, and the photo processed", c.name, res.MetadataWarning, c.warning)
		}
		if c.name == "rating of 9" && (res.Metadata.XMP == nil || res.Metadata.XMP.ColorLabel != "blue" || res.Metadata.XMP.Rating != 0) {
			t.Fatalf("%s: read %+v, want the label without the rating", c.name, res.Metadata.XMP)
		}
	}
}
