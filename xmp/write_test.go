package xmp_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lightbox/xmp"
)

// need fails the test when a tool the test judges by is missing.
func need(t testing.TB, tool, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Fatalf("%s is not installed: install %s", tool, pkg)
	}
}

// exiftool returns the tags exiftool reads from file, by group and name,
// with values as numbers where exiftool has them (-n) and lists as lists.
func exiftool(t testing.TB, file string, args ...string) map[string]any {
	t.Helper()
	need(t, "exiftool", "libimage-exiftool-perl")
	out, err := exec.Command("exiftool", append([]string{"-j", "-G1", "-struct", "-n"}, append(args, file)...)...).Output()
	if err != nil {
		t.Fatalf("exiftool %s: %v", file, err)
	}
	var tags []map[string]any
	if err := json.Unmarshal(out, &tags); err != nil || len(tags) != 1 {
		t.Fatalf("exiftool %s: %v\n%s", file, err, out)
	}
	return tags[0]
}

// ownedTags are the tags, as exiftool names them, that Write owns.
var ownedTags = []string{
	"XMP-xmp:Rating", "XMP-xmp:Label", "XMP-digiKam:ColorLabel", "XMP-digiKam:PickLabel",
	"XMP-dc:Subject", "XMP-lr:HierarchicalSubject", "XMP-dc:Title", "XMP-dc:Description",
	"XMP-dc:Rights", "XMP-dc:Creator", "XMP-photoshop:Headline", "XMP-photoshop:City",
	"XMP-photoshop:State", "XMP-photoshop:Country", "XMP-photoshop:Credit", "XMP-photoshop:Source",
	"XMP-photoshop:Instructions", "XMP-iptcCore:Location",
}

// notOwned returns the XMP tags of tags that Write does not own; an
// alternative language of an owned tag (XMP-dc:Title-pt-PT) is owned.
func notOwned(tags map[string]any) map[string]any {
	kept := map[string]any{}
next:
	for k, v := range tags {
		if !strings.HasPrefix(k, "XMP-") {
			continue
		}
		for _, o := range ownedTags {
			if k == o || strings.HasPrefix(k, o+"-") {
				continue next
			}
		}
		kept[k] = v
	}
	return kept
}

// Sidecars as each editor writes them.
var sidecars = []struct {
	editor, name, packet string
}{
	{"lightroom", "IMG_0412.xmp", `<?xpacket begin="` + "\ufeff" + `" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="Adobe XMP Core 7.0-c000 1.000000, 0000/00/00-00:00:00        ">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:tiff="http://ns.adobe.com/tiff/1.0/"
    xmlns:xmpMM="http://ns.adobe.com/xap/1.0/mm/"
    xmlns:stEvt="http://ns.adobe.com/xap/1.0/sType/ResourceEvent#"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:lr="http://ns.adobe.com/lightroom/1.0/"
    xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"
    xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/"
   xmp:ModifyDate="2026-05-02T18:04:11+01:00"
   xmp:Rating="3"
   xmp:Label="Red"
   tiff:Make="Canon"
   xmpMM:DocumentID="xmp.did:6b1c0f5e-0c4a-4a55-9d1e-3f5c2d6a1b7e"
   xmpMM:InstanceID="xmp.iid:0f0e4c2a-7d1e-4b8b-8b0c-3c1b9f0a2e61"
   photoshop:City="Lisbon"
   crs:Version="15.3"
   crs:ProcessVersion="11.0"
   crs:WhiteBalance="As Shot"
   crs:Exposure2012="+0.50"
   crs:Contrast2012="+12"
   crs:HasCrop="False">
   <xmpMM:History>
    <rdf:Seq>
     <rdf:li
      stEvt:action="saved"
      stEvt:instanceID="xmp.iid:0f0e4c2a-7d1e-4b8b-8b0c-3c1b9f0a2e61"
      stEvt:when="2026-05-02T18:04:11+01:00"
      stEvt:softwareAgent="Adobe Photoshop Lightroom Classic 13.3 (Macintosh)"
      stEvt:changed="/metadata"/>
    </rdf:Seq>
   </xmpMM:History>
   <crs:ToneCurvePV2012>
    <rdf:Seq>
     <rdf:li>0, 0</rdf:li>
     <rdf:li>255, 255</rdf:li>
    </rdf:Seq>
   </crs:ToneCurvePV2012>
   <dc:title>
    <rdf:Alt>
     <rdf:li xml:lang="x-default">Kite</rdf:li>
     <rdf:li xml:lang="pt-PT">Papagaio</rdf:li>
    </rdf:Alt>
   </dc:title>
   <dc:subject>
    <rdf:Bag>
     <rdf:li>kite</rdf:li>
     <rdf:li>Lisbon</rdf:li>
     <rdf:li>beach</rdf:li>
    </rdf:Bag>
   </dc:subject>
   <lr:hierarchicalSubject>
    <rdf:Bag>
     <rdf:li>sport|kite</rdf:li>
     <rdf:li>places|Portugal|Lisbon</rdf:li>
     <rdf:li>places|beach</rdf:li>
    </rdf:Bag>
   </lr:hierarchicalSubject>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
` + strings.Repeat("                                                                                                    \n", 20) + `<?xpacket end="w"?>`},
	{"photo mechanic", "DSC_1187.xmp", `<?xpacket begin="` + "\ufeff" + `" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 5.5.0">
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:photomechanic="http://ns.camerabits.com/photomechanic/1.0/">
	<photomechanic:ColorClass>2</photomechanic:ColorClass>
	<photomechanic:Tagged>True</photomechanic:Tagged>
	<photomechanic:Prefs>0:2:0:000941</photomechanic:Prefs>
	<photomechanic:PMVersion>PM6</photomechanic:PMVersion>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/">
	<xmp:Rating>2</xmp:Rating>
	<xmp:Label>Second</xmp:Label>
	<xmp:CreatorTool>Photo Mechanic 6</xmp:CreatorTool>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/">
	<photoshop:Headline>Final lap</photoshop:Headline>
	<photoshop:Credit>Agency</photoshop:Credit>
	<photoshop:DateCreated>2026-05-02T15:11:02</photoshop:DateCreated>
	<photoshop:Category>SPO</photoshop:Category>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">
	<dc:creator><rdf:Seq><rdf:li>Rui Sá</rdf:li></rdf:Seq></dc:creator>
	<dc:subject><rdf:Bag><rdf:li>race</rdf:li></rdf:Bag></dc:subject>
</rdf:Description>
</rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>`},
	{"darktable", "IMG_2031.NEF.xmp", `<?xml version="1.0" encoding="UTF-8"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 4.4.0-Exiv2">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:exif="http://ns.adobe.com/exif/1.0/"
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:xmpMM="http://ns.adobe.com/xap/1.0/mm/"
    xmlns:darktable="http://darktable.sf.net/"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:lr="http://ns.adobe.com/lightroom/1.0/"
   exif:DateTimeOriginal="2026:05:02 15:11:02"
   xmp:Rating="1"
   xmpMM:DerivedFrom="IMG_2031.NEF"
   darktable:import_timestamp="63843801062000000"
   darktable:xmp_version="5"
   darktable:raw_params="0"
   darktable:auto_presets_applied="1"
   darktable:history_end="2"
   darktable:iop_order_version="4">
   <darktable:masks_history>
    <rdf:Seq/>
   </darktable:masks_history>
   <darktable:history>
    <rdf:Seq>
     <rdf:li
      darktable:num="0"
      darktable:operation="rawprepare"
      darktable:enabled="1"
      darktable:modversion="2"
      darktable:params="00000000000000000000000000000000"
      darktable:multi_name=""
      darktable:multi_priority="0"/>
     <rdf:li
      darktable:num="1"
      darktable:operation="exposure"
      darktable:enabled="1"
      darktable:modversion="6"
      darktable:params="0000000000000000cdcccc3e00004842"
      darktable:multi_name=""
      darktable:multi_priority="0"/>
    </rdf:Seq>
   </darktable:history>
   <dc:subject>
    <rdf:Bag>
     <rdf:li>darktable|format|nef</rdf:li>
    </rdf:Bag>
   </dc:subject>
   <lr:hierarchicalSubject>
    <rdf:Bag>
     <rdf:li>darktable|format|nef</rdf:li>
    </rdf:Bag>
   </lr:hierarchicalSubject>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
`},
	{"digikam", "party.jpg.xmp", `<?xpacket begin="` + "\ufeff" + `" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 4.4.0-Exiv2">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:digiKam="http://www.digikam.org/ns/1.0/"
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:MicrosoftPhoto="http://ns.microsoft.com/photo/1.0/"
    xmlns:acdsee="http://ns.acdsee.com/iptc/1.0/"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
   digiKam:PickLabel="3"
   digiKam:ColorLabel="4"
   xmp:Rating="4"
   MicrosoftPhoto:Rating="75"
   acdsee:categories="&lt;Categories&gt;&lt;Category Assigned=&quot;1&quot;&gt;People&lt;/Category&gt;&lt;/Categories&gt;">
   <digiKam:TagsList>
    <rdf:Seq>
     <rdf:li>People/Ana</rdf:li>
     <rdf:li>Events/Party</rdf:li>
    </rdf:Seq>
   </digiKam:TagsList>
   <MicrosoftPhoto:LastKeywordXMP>
    <rdf:Bag>
     <rdf:li>People/Ana</rdf:li>
    </rdf:Bag>
   </MicrosoftPhoto:LastKeywordXMP>
   <dc:subject>
    <rdf:Bag>
     <rdf:li>Ana</rdf:li>
     <rdf:li>Party</rdf:li>
    </rdf:Bag>
   </dc:subject>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>`},
}

// Each editor's sidecar, merged with new decisions, holds the decisions
// as exiftool reads them and every tag Lightbox does not own unchanged.
func TestWriteMergesEachEditorsSidecar(t *testing.T) {
	decisions := map[string]xmp.Decisions{
		"lightroom": {Rating: 5, ColorLabel: "purple", Keywords: []string{"kite", "Lisbon", "sunset"},
			IPTC: xmp.IPTC{Title: "Kite at dusk", Description: "A kite over Carcavelos", Creator: "Ana Lima; Rui Sá",
				Copyright: "© 2026 Ana Lima", Headline: "Kites", City: "Cascais", State: "Lisboa", Country: "Portugal",
				Credit: "Ana Lima", Source: "Card 1", Instructions: "No crops", Location: "Carcavelos"}},
		"photo mechanic": {Rejected: true, ColorLabel: "red", Keywords: []string{"race", "finish"},
			IPTC: xmp.IPTC{Headline: "Final lap", Creator: "Rui Sá"}},
		"darktable": {Rating: 2, ColorLabel: "green", Keywords: []string{"nef", "street"}},
		"digikam":   {Rating: 3, Picked: true, ColorLabel: "blue", Keywords: []string{"Ana"}, IPTC: xmp.IPTC{City: "Porto"}},
	}
	wantTags := map[string]map[string]any{
		"lightroom": {"XMP-xmp:Rating": 5.0, "XMP-xmp:Label": "Purple", "XMP-digiKam:ColorLabel": 6.0, "XMP-digiKam:PickLabel": 0.0,
			"XMP-dc:Subject":             []any{"kite", "Lisbon", "sunset"},
			"XMP-lr:HierarchicalSubject": []any{"sport|kite", "places|Portugal|Lisbon", "sunset"},
			"XMP-dc:Title":               "Kite at dusk", "XMP-dc:Description": "A kite over Carcavelos",
			"XMP-dc:Creator": []any{"Ana Lima", "Rui Sá"}, "XMP-dc:Rights": "© 2026 Ana Lima",
			"XMP-photoshop:Headline": "Kites", "XMP-photoshop:City": "Cascais", "XMP-photoshop:State": "Lisboa",
			"XMP-photoshop:Country": "Portugal", "XMP-photoshop:Credit": "Ana Lima", "XMP-photoshop:Source": "Card 1",
			"XMP-photoshop:Instructions": "No crops", "XMP-iptcCore:Location": "Carcavelos"},
		"photo mechanic": {"XMP-xmp:Rating": -1.0, "XMP-xmp:Label": "Red", "XMP-digiKam:ColorLabel": 1.0, "XMP-digiKam:PickLabel": 1.0,
			"XMP-dc:Subject": []any{"race", "finish"}, "XMP-lr:HierarchicalSubject": []any{"race", "finish"},
			"XMP-photoshop:Headline": "Final lap", "XMP-dc:Creator": []any{"Rui Sá"}},
		"darktable": {"XMP-xmp:Rating": 2.0, "XMP-xmp:Label": "Green", "XMP-digiKam:ColorLabel": 4.0, "XMP-digiKam:PickLabel": 0.0,
			"XMP-dc:Subject": []any{"nef", "street"}, "XMP-lr:HierarchicalSubject": []any{"darktable|format|nef", "street"}},
		"digikam": {"XMP-xmp:Rating": 3.0, "XMP-xmp:Label": "Blue", "XMP-digiKam:ColorLabel": 5.0, "XMP-digiKam:PickLabel": 3.0,
			"XMP-dc:Subject": []any{"Ana"}, "XMP-lr:HierarchicalSubject": []any{"Ana"}, "XMP-photoshop:City": "Porto"},
	}
	for _, s := range sidecars {
		t.Run(s.editor, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			before := filepath.Join(dir, "before", s.name)
			after := filepath.Join(dir, s.name)
			os.Mkdir(filepath.Dir(before), 0o755)
			if err := os.WriteFile(before, []byte(s.packet), 0o644); err != nil {
				t.Fatal(err)
			}
			d := decisions[s.editor]
			out, err := xmp.Write([]byte(s.packet), d, xmp.WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(after, out, 0o644); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(out, []byte("<?xpacket begin=")) && !bytes.HasPrefix(out, []byte("<?xml")) ||
				!bytes.Contains(out, []byte("<?xpacket begin=")) || !bytes.HasSuffix(out, []byte(`<?xpacket end="w"?>`)) {
				t.Errorf("not a full packet:\n%s", out)
			}

			old, got := exiftool(t, before), exiftool(t, after)
			for _, k := range []string{"ExifTool:Warning", "ExifTool:Error"} {
				if !reflect.DeepEqual(got[k], old[k]) {
					t.Errorf("exiftool: %v, before %v\n%s", got[k], old[k], out)
				}
			}
			for k, v := range wantTags[s.editor] {
				if !reflect.DeepEqual(got[k], v) {
					t.Errorf("%s = %#v, want %#v", k, got[k], v)
				}
			}
			for _, k := range ownedTags {
				if _, ok := wantTags[s.editor][k]; !ok && got[k] != nil {
					t.Errorf("%s = %#v, want none", k, got[k])
				}
			}
			if kept, was := notOwned(got), notOwned(old); !reflect.DeepEqual(kept, was) {
				t.Errorf("tags not owned changed:\n was %v\n now %v\n%s", was, kept, out)
			}

			back, warnings, err := xmp.Read(out)
			if err != nil || len(warnings) != 0 || !reflect.DeepEqual(back, d) {
				t.Errorf("read back %+v, %v, %v; want %+v", back, warnings, err, d)
			}
		})
	}
}

// An owned property in attribute and in element form, in two
// descriptions, is replaced once; prefixes the packet binds elsewhere
// are left alone.
func TestWriteReplacesEveryForm(t *testing.T) {
	existing := packet(`<rdf:Description rdf:about="a" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:Rating="3" xmp:Label="Red"/>
  <rdf:Description rdf:about="a" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:dc="urn:not-dublin-core" dc:format="kept">
   <xmp:Rating>4</xmp:Rating>
   <xmp:Label/>
   <xmp:CreatorTool>Bridge</xmp:CreatorTool>
  </rdf:Description>`)
	d := xmp.Decisions{Rating: 1, Keywords: []string{"a"}}
	out, err := xmp.Write(existing, d, xmp.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(out, []byte("<xmp:Rating")) + bytes.Count(out, []byte("xmp:Rating=")); n != 1 {
		t.Errorf("xmp:Rating %d times:\n%s", n, out)
	}
	for _, gone := range []string{"xmp:Label", `"3"`, ">4<"} {
		if bytes.Contains(out, []byte(gone)) {
			t.Errorf("%s is still there:\n%s", gone, out)
		}
	}
	for _, kept := range []string{`rdf:about="a"`, `dc:format="kept"`, `<xmp:CreatorTool>Bridge</xmp:CreatorTool>`} {
		if !bytes.Contains(out, []byte(kept)) {
			t.Errorf("%s is gone:\n%s", kept, out)
		}
	}
	file := filepath.Join(t.TempDir(), "a.xmp")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	tags := exiftool(t, file)
	if tags["XMP-xmp:Rating"] != 1.0 || !reflect.DeepEqual(tags["XMP-dc:Subject"], []any{"a"}) || tags["XMP-xmp:CreatorTool"] != "Bridge" {
		t.Errorf("exiftool reads %v\n%s", tags, out)
	}
	if back, _, err := xmp.Read(out); err != nil || !reflect.DeepEqual(back, d) {
		t.Errorf("read back %+v, %v", back, err)
	}
}

// What Write writes, Read reads back as it was, whatever it merged into.
func TestWriteRoundTrip(t *testing.T) {
	existing := [][]byte{nil, []byte(sidecars[0].packet), []byte(sidecars[1].packet), []byte(sidecars[2].packet), []byte(sidecars[3].packet),
		[]byte(`<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/>`),
		[]byte(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" xmlns:dc="urn:other" xmlns:xmp="urn:other2" dc:title="not dc" xmp:Rating="x"/></rdf:RDF></x:xmpmeta>`),
	}
	for i, d := range []xmp.Decisions{
		{},
		{Rating: 5},
		{Rejected: true, ColorLabel: "yellow"},
		{Picked: true, Rating: 1, ColorLabel: "purple", Keywords: []string{"one", "two words", "a|b"}},
		{Keywords: []string{"<&>\"'"}, IPTC: xmp.IPTC{Title: "Line one\nline two", Description: "tab\there", Creator: "A; B; C",
			Copyright: "©", Headline: "h", City: "c", State: "s", Country: "co", Credit: "cr", Source: "so", Instructions: "in", Location: "lo"}},
	} {
		for j, e := range existing {
			out, err := xmp.Write(e, d, xmp.WriteOptions{})
			if err != nil {
				t.Fatalf("decisions %d, packet %d: %v", i, j, err)
			}
			got, warnings, err := xmp.Read(out)
			if err != nil || len(warnings) != 0 || !reflect.DeepEqual(got, d) {
				t.Errorf("decisions %d, packet %d: read back %+v, %v, %v; want %+v\n%s", i, j, got, warnings, err, d, out)
			}
		}
	}
}

// A pick is written as stars or a label for editors without a pick flag.
func TestWritePickOptions(t *testing.T) {
	for _, c := range []struct {
		pick string
		d    xmp.Decisions
		want xmp.Decisions
	}{
		{"none", xmp.Decisions{Picked: true}, xmp.Decisions{Picked: true}},
		{"rating:3", xmp.Decisions{Picked: true, Rating: 1}, xmp.Decisions{Picked: true, Rating: 3}},
		{"rating:3", xmp.Decisions{Picked: true, Rating: 5}, xmp.Decisions{Picked: true, Rating: 5}},
		{"rating:3", xmp.Decisions{Rating: 1}, xmp.Decisions{Rating: 1}},
		{"label:Green", xmp.Decisions{Picked: true}, xmp.Decisions{Picked: true, ColorLabel: "green"}},
		{"label:green", xmp.Decisions{Picked: true, ColorLabel: "red"}, xmp.Decisions{Picked: true, ColorLabel: "red"}},
	} {
		out, err := xmp.Write(nil, c.d, xmp.WriteOptions{Pick: c.pick})
		if err != nil {
			t.Fatal(err)
		}
		if got, _, err := xmp.Read(out); err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("pick %s, %+v: read back %+v, %v; want %+v", c.pick, c.d, got, err, c.want)
		}
	}
	for _, s := range []string{"", "none", "rating:1", "rating:5", "label:purple", "label:Red"} {
		if err := xmp.ParsePick(s); err != nil {
			t.Errorf("ParsePick(%q): %v", s, err)
		}
	}
	for s, reason := range map[string]string{"rating:0": "1 to 5", "rating:6": "1 to 5", "rating:x": "1 to 5",
		"label:orange": "red, yellow", "none:1": "no value", "stars:3": "rating:N", "rating": "1 to 5"} {
		if err := xmp.ParsePick(s); err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("ParsePick(%q): %v, want an error naming %q", s, err, reason)
		}
	}
	if _, err := xmp.Write(nil, xmp.Decisions{}, xmp.WriteOptions{Pick: "label:orange"}); err == nil {
		t.Error("Write took a bad pick option")
	}
	if _, err := xmp.Write(nil, xmp.Decisions{Rating: 6}, xmp.WriteOptions{}); err == nil {
		t.Error("Write took rating 6")
	}
	if _, err := xmp.Write(nil, xmp.Decisions{ColorLabel: "orange"}, xmp.WriteOptions{}); err == nil {
		t.Error("Write took colour orange")
	}
}

// A packet Write cannot trust is an error and nothing is written.
func TestWriteRefusesBrokenPackets(t *testing.T) {
	lol := `<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>`
	for _, c := range []struct {
		name   string
		packet []byte
		reason string
	}{
		{"entity expansion", []byte(lol + string(packet(`<rdf:Description rdf:about=""`+namespaces+`><dc:format>&b;</dc:format></rdf:Description>`))), "DOCTYPE"},
		{"invalid UTF-8", packet(`<rdf:Description rdf:about=""` + namespaces + `><dc:format>` + "\xff\xfe" + `</dc:format></rdf:Description>`), "UTF-8"},
		{"nested 10,000 deep", packet(strings.Repeat("<a>", 10000) + strings.Repeat("</a>", 10000)), "deep"},
		{"too large", packet(`<rdf:Description rdf:about=""` + namespaces + `>` + strings.Repeat(" ", xmp.MaxPacket) + `</rdf:Description>`), "bytes"},
		{"cut short", packet(`<rdf:Description rdf:about=""` + namespaces + ` xmp:Rating="3">`)[:200], ""},
		{"not XMP", []byte(`<html><body/></html>`), "rdf:RDF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := xmp.Write(c.packet, xmp.Decisions{Rating: 2}, xmp.WriteOptions{})
			if err == nil || !strings.Contains(err.Error(), c.reason) || out != nil {
				t.Fatalf("err %v, out %d bytes; want an error naming %q", err, len(out), c.reason)
			}
			if bytes.Contains([]byte(err.Error()), []byte("aaaaaaaaaa")) {
				t.Fatal("an entity was expanded")
			}
		})
	}
}

func BenchmarkWriteMerge(b *testing.B) {
	existing := []byte(sidecars[0].packet)
	d := xmp.Decisions{Rating: 4, ColorLabel: "red", Keywords: []string{"kite", "Lisbon", "sunset"},
		IPTC: xmp.IPTC{Title: "Kite", Creator: "Ana Lima", City: "Cascais"}}
	b.SetBytes(int64(len(existing)))
	for b.Loop() {
		if _, err := xmp.Write(existing, d, xmp.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// Whatever packet Write merges into, what it writes reads back as d.
func FuzzWrite(f *testing.F) {
	for _, s := range sidecars {
		f.Add([]byte(s.packet))
	}
	f.Add([]byte(`<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/>`))
	f.Add([]byte(`<x:xmpmeta><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"></rdf:RDF></x:xmpmeta >`))
	f.Add([]byte(`<x:xmpmeta><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description><dc:subject>0</dc:subject></rdf:Description></rdf:RDF></x:xmpmeta>`))
	f.Add([]byte(`<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:00="http://purl.org/dc/elements/1.1/"/></rdf:RDF>`))
	d := xmp.Decisions{Rating: 2, ColorLabel: "blue", Keywords: []string{"k"}, IPTC: xmp.IPTC{Title: "t"}}
	f.Fuzz(func(t *testing.T, existing []byte) {
		out, err := xmp.Write(existing, d, xmp.WriteOptions{})
		if err != nil {
			return
		}
		got, warnings, err := xmp.Read(out)
		if err != nil || len(warnings) != 0 || !reflect.DeepEqual(got, d) {
			t.Fatalf("read back %+v, %v, %v\n%s", got, warnings, err, out)
		}
	})
}
