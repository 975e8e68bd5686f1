package xmp_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lightbox/xmp"
)

// packet wraps RDF descriptions as editors write them.
func packet(body string) []byte {
	return []byte(`<?xpacket begin="` + "\ufeff" + `" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
` + body + `
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>`)
}

const namespaces = ` xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:lr="http://ns.adobe.com/lightroom/1.0/"
    xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"
    xmlns:Iptc4xmpCore="http://iptc.org/std/Iptc4xmpCore/1.0/xmlns/"
    xmlns:digiKam="http://www.digikam.org/ns/1.0/"
    xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/"`

// Packets in the forms each editor writes: Lightroom's compact
// attributes with lists as elements, Photo Mechanic's elements, Bridge's
// own label text, darktable's attributes and digiKam's numbered labels.
func TestReadsEachEditorsPacket(t *testing.T) {
	for _, c := range []struct {
		name string
		body string
		want xmp.Decisions
	}{
		{"lightroom", `<rdf:Description rdf:about=""` + namespaces + `
    xmp:Rating="4" xmp:Label="Red" crs:Exposure2012="+0.50" photoshop:City="Lisbon" photoshop:Country="Portugal">
   <dc:subject><rdf:Bag><rdf:li>kite</rdf:li><rdf:li>beach</rdf:li></rdf:Bag></dc:subject>
   <lr:hierarchicalSubject><rdf:Bag><rdf:li>places|Portugal|Lisbon</rdf:li><rdf:li>sport|kite</rdf:li></rdf:Bag></lr:hierarchicalSubject>
   <dc:title><rdf:Alt><rdf:li xml:lang="pt-PT">Papagaio</rdf:li><rdf:li xml:lang="x-default">Kite</rdf:li></rdf:Alt></dc:title>
   <dc:creator><rdf:Seq><rdf:li>Ana Lima</rdf:li><rdf:li>Rui Sá</rdf:li></rdf:Seq></dc:creator>
   <dc:rights><rdf:Alt><rdf:li xml:lang="x-default">© 2026 Ana Lima</rdf:li></rdf:Alt></dc:rights>
  </rdf:Description>`, xmp.Decisions{Rating: 4, ColorLabel: "red", Keywords: []string{"kite", "beach", "Lisbon"},
			IPTC: xmp.IPTC{Title: "Kite", Creator: "Ana Lima; Rui Sá", Copyright: "© 2026 Ana Lima", City: "Lisbon", Country: "Portugal"}}},
		{"photo mechanic", `<rdf:Description rdf:about=""` + namespaces + `>
   <xmp:Rating>2</xmp:Rating>
   <xmp:Label>Purple</xmp:Label>
   <photoshop:Headline>Final</photoshop:Headline>
   <photoshop:Credit>Agency</photoshop:Credit>
   <photoshop:Source>Card 2</photoshop:Source>
   <photoshop:Instructions>No crops</photoshop:Instructions>
   <photoshop:State>Lisboa</photoshop:State>
   <Iptc4xmpCore:Location>Belém</Iptc4xmpCore:Location>
   <dc:description><rdf:Alt><rdf:li xml:lang="x-default">The race's finish</rdf:li></rdf:Alt></dc:description>
  </rdf:Description>`, xmp.Decisions{Rating: 2, ColorLabel: "purple",
			IPTC: xmp.IPTC{Headline: "Final", Credit: "Agency", Source: "Card 2", Instructions: "No crops", State: "Lisboa", Location: "Belém", Description: "The race's finish"}}},
		{"bridge reject and a label that is no colour", `<rdf:Description rdf:about=""` + namespaces + ` xmp:Rating="-1" xmp:Label="Approved"/>`,
			xmp.Decisions{Rejected: true}},
		{"darktable", `<rdf:Description rdf:about=""` + namespaces + ` xmp:Rating="1">
   <dc:subject><rdf:Bag><rdf:li>darktable|format|nef</rdf:li></rdf:Bag></dc:subject>
   <lr:hierarchicalSubject><rdf:Bag><rdf:li>darktable|format|nef</rdf:li></rdf:Bag></lr:hierarchicalSubject>
  </rdf:Description>`, xmp.Decisions{Rating: 1, Keywords: []string{"darktable|format|nef", "nef"}}},
		{"digikam", `<rdf:Description rdf:about=""` + namespaces + ` digiKam:PickLabel="3" digiKam:ColorLabel="4" xmp:Rating="5"/>`,
			xmp.Decisions{Rating: 5, Picked: true, ColorLabel: "green"}},
		{"digikam reject", `<rdf:Description rdf:about=""` + namespaces + ` digiKam:PickLabel="1" digiKam:ColorLabel="6"/>`,
			xmp.Decisions{Rejected: true, ColorLabel: "purple"}},
		{"two descriptions", `<rdf:Description rdf:about=""` + namespaces + ` xmp:Rating="3"/>
  <rdf:Description rdf:about=""` + namespaces + `><dc:subject><rdf:Bag><rdf:li>one</rdf:li></rdf:Bag></dc:subject></rdf:Description>`,
			xmp.Decisions{Rating: 3, Keywords: []string{"one"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, warnings, err := xmp.Read(packet(c.body))
			if err != nil || len(warnings) != 0 {
				t.Fatalf("err %v, warnings %v", err, warnings)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("read\n %+v\nwant\n %+v", got, c.want)
			}
		})
	}
}

// A sidecar exiftool writes, as the tools built on it do, reads back as
// it was written.
func TestReadsWhatExiftoolWrites(t *testing.T) {
	if _, err := exec.LookPath("exiftool"); err != nil {
		t.Fatal("exiftool is not installed (libimage-exiftool-perl; make test installs it)")
	}
	out := filepath.Join(t.TempDir(), "photo.xmp")
	cmd := exec.Command("exiftool", "-q", "-o", out,
		"-XMP-xmp:Rating=3", "-XMP-xmp:Label=Blue",
		"-XMP-dc:Subject=bride", "-XMP-dc:Subject=rings",
		"-XMP-lr:HierarchicalSubject=people|bride",
		"-XMP-dc:Title=First dance", "-XMP-dc:Creator=Ana Lima", "-XMP-dc:Rights=CC BY 4.0",
		"-XMP-photoshop:City=Porto", "-XMP-iptcCore:Location=Quinta")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("exiftool: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, warnings, err := xmp.Read(data)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("err %v, warnings %v", err, warnings)
	}
	want := xmp.Decisions{Rating: 3, ColorLabel: "blue", Keywords: []string{"bride", "rings"},
		IPTC: xmp.IPTC{Title: "First dance", Creator: "Ana Lima", Copyright: "CC BY 4.0", City: "Porto", Location: "Quinta"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read\n %+v\nwant\n %+v", got, want)
	}
}

// Hostile and broken packets are refused whole, with a reason; values out
// of range are left out with a warning and the rest is read.
func TestRefusesWhatItCannotTrust(t *testing.T) {
	lol := `<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>`
	deep := strings.Repeat("<a>", 10000) + strings.Repeat("</a>", 10000)
	for _, c := range []struct {
		name   string
		packet []byte
		reason string
	}{
		{"entity expansion", []byte(lol + string(packet(`<rdf:Description rdf:about=""`+namespaces+`><dc:title>&c;</dc:title></rdf:Description>`))), "DOCTYPE"},
		{"external entity", []byte(`<!DOCTYPE x [<!ENTITY f SYSTEM "file:///etc/passwd">]>` + string(packet(`<rdf:Description rdf:about=""`+namespaces+`><dc:title>&f;</dc:title></rdf:Description>`))), "DOCTYPE"},
		{"undeclared entity", packet(`<rdf:Description rdf:about=""` + namespaces + `><dc:title>&f;</dc:title></rdf:Description>`), "entity"},
		{"too large", packet(`<rdf:Description rdf:about=""` + namespaces + ` xmp:Rating="3">` + strings.Repeat(" ", xmp.MaxPacket) + `</rdf:Description>`), "bytes"},
		{"nested 10,000 deep", packet(deep), "deep"},
		{"invalid UTF-8", packet(`<rdf:Description rdf:about=""` + namespaces + `><dc:title>` + "\xff\xfe" + `</dc:title></rdf:Description>`), "UTF-8"},
		{"cut short", packet(`<rdf:Description rdf:about=""` + namespaces + ` xmp:Rating="3">`)[:200], ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, _, err := xmp.Read(c.packet)
			if !errors.Is(err, xmp.ErrRefused) || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("err %v, want a refusal naming %q", err, c.reason)
			}
			if !reflect.DeepEqual(d, xmp.Decisions{}) {
				t.Fatalf("a refused packet gave %+v", d)
			}
		})
	}
	for _, rating := range []string{"9", "abc", "2.5"} {
		d, warnings, err := xmp.Read(packet(`<rdf:Description rdf:about=""` + namespaces + ` xmp:Rating="` + rating + `" xmp:Label="Green"/>`))
		if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], rating) {
			t.Fatalf("rating %q: err %v, warnings %v", rating, err, warnings)
		}
		if d.Rating != 0 || d.Rejected || d.ColorLabel != "green" {
			t.Fatalf("rating %q: read %+v, want no rating and the label", rating, d)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add(packet(`<rdf:Description rdf:about=""` + namespaces + ` xmp:Rating="4"><dc:subject><rdf:Bag><rdf:li>a</rdf:li></rdf:Bag></dc:subject></rdf:Description>`))
	f.Add([]byte(`<a><b>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, _, err := xmp.Read(data)
		if err != nil && !reflect.DeepEqual(d, xmp.Decisions{}) {
			t.Fatal("decisions from a refused packet")
		}
		if d.Rating < 0 || d.Rating > 5 {
			t.Fatalf("rating %d", d.Rating)
		}
	})
}
