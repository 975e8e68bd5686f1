package server_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"lightbox/xmp"
)

// lightroomSidecar is a sidecar as Lightroom writes it beside a raw: the
// decisions and captions, and develop settings the service keeps as is.
const lightroomSidecar = `<?xpacket begin="` + "\ufeff" + `" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="Adobe XMP Core 7.0-c000">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/"
   xmp:Rating="4" xmp:Label="Red"
   crs:Version="15.0" crs:ProcessVersion="11.0" crs:WhiteBalance="As Shot"
   crs:Exposure2012="+0.35" crs:Contrast2012="+12" crs:HasCrop="False">
   <dc:subject><rdf:Bag><rdf:li>harbour</rdf:li><rdf:li>dusk</rdf:li></rdf:Bag></dc:subject>
   <dc:title><rdf:Alt><rdf:li xml:lang="x-default">Harbour at dusk</rdf:li></rdf:Alt></dc:title>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>`

// embedded is the XMP packet put into a photo: decisions the sidecar's
// replace.
const embedded = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:Rating="2" xmp:Label="Blue"/>
</rdf:RDF></x:xmpmeta>`

// withXMP is a JPEG with packet in an APP1 segment after its SOI.
func withXMP(t *testing.T, jpeg []byte, packet string) []byte {
	t.Helper()
	body := append([]byte("http://ns.adobe.com/xap/1.0/\x00"), packet...)
	seg := []byte{0xff, 0xe1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(body)+2))
	return append(append(append([]byte{}, jpeg[:2]...), append(seg, body...)...), jpeg[2:]...)
}

type sidecarReply struct {
	AssetID   string
	Decisions struct {
		Rating           int
		Rejected, Picked bool
		ColorLabel       string
		Keywords         []string
		IPTC             map[string]string
	}
	Applied, HandDecisionKept bool
	Warnings                  []string
}

func TestSidecars(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.startWorker()
	key := a.user("ana@example.org", false)
	bob := a.user("bob@example.org", false)
	project := a.newProject(key)
	ps := corpus(t, "photos/kite-2560x1600.jpg", "photos/path-2560x1600.jpg", "photos/blinds.jpg", "photos/wood.jpg", "photos/dune.jpg")
	ps[0].data = withXMP(t, ps[0].data, embedded)
	ps[3].data = withXMP(t, ps[3].data, embedded)
	_, ups := a.uploadAll(key, project, ps[:3])
	ingested, handRated, hostile := ups[0].AssetID, ups[1].AssetID, ups[2].AssetID
	waitCount(t, a, "ingest over", 3, `SELECT count(*) FROM assets WHERE project_id = $1 AND status IN ('cull', 'search', 'ai')`, project)

	put := func(asset, who, body string, headers ...string) reply {
		return a.do("PUT", "/v1/assets/"+asset+"/sidecar", who, body, append([]string{"Content-Type", "application/rdf+xml"}, headers...)...)
	}
	asset := func(id string) ratedAsset {
		r := a.do("GET", "/v1/assets/"+id, key, nil)
		expect(t, r, 200, "")
		return decode[ratedAsset](t, r)
	}
	sidecarApplied := func(id string) {
		t.Helper()
		got := asset(id)
		if got.MyRating == nil || got.MyRating.Rating == nil || *got.MyRating.Rating != 4 || got.MyRating.ColorLabel == nil ||
			*got.MyRating.ColorLabel != "red" || strings.Join(got.Keywords, ",") != "harbour,dusk" || got.IPTC["title"] != "Harbour at dusk" {
			t.Fatalf("asset after the sidecar: %+v (rating %+v)", got, got.MyRating)
		}
	}

	// The photo's own packet rated it 2, blue; the sidecar's decisions
	// replace those, which no one made by hand. The same PUT twice is the
	// same state.
	before := asset(ingested)
	if before.MyRating == nil || before.MyRating.Rating == nil || *before.MyRating.Rating != 2 {
		t.Fatalf("the embedded packet's rating was not applied: %+v", before.MyRating)
	}
	for range 2 {
		r := put(ingested, key, lightroomSidecar)
		expect(t, r, 200, "")
		got := decode[sidecarReply](t, r)
		if !got.Applied || got.HandDecisionKept || got.AssetID != ingested || got.Decisions.Rating != 4 ||
			got.Decisions.ColorLabel != "red" || got.Decisions.IPTC["title"] != "Harbour at dusk" || len(got.Warnings) != 0 {
			t.Fatalf("PUT sidecar: %s", r.body)
		}
		sidecarApplied(ingested)
	}
	r := a.do("GET", "/v1/assets/"+ingested+"/sidecar", key, nil)
	expect(t, r, 200, "")
	if string(r.body) != lightroomSidecar || r.header.Get("Content-Type") != "application/rdf+xml" {
		t.Fatalf("GET sidecar: %s %q", r.header.Get("Content-Type"), r.body)
	}
	r = a.do("GET", "/v1/assets/"+ingested+"/files", key, nil)
	expect(t, r, 200, "")
	if !bytes.Contains(r.body, []byte(`"kind":"xmp_sidecar"`)) {
		t.Fatalf("files lack the sidecar: %s", r.body)
	}
	expect(t, a.do("GET", "/v1/assets/"+handRated+"/sidecar", key, nil), 404, "sidecar_not_found")

	// A rating made by hand stays; the captions still fill what is unset.
	expect(t, a.do("POST", "/v1/assets/"+handRated+"/ratings", key, map[string]any{"rating": 1}), 200, "")
	r = put(handRated, key, lightroomSidecar, "Content-Type", "text/xml; charset=utf-8")
	expect(t, r, 200, "")
	if got := decode[sidecarReply](t, r); !got.Applied || !got.HandDecisionKept {
		t.Fatalf("PUT sidecar over a hand rating: %s", r.body)
	}
	if got := asset(handRated); *got.MyRating.Rating != 1 || got.MyRating.ColorLabel != nil || got.IPTC["title"] != "Harbour at dusk" {
		t.Fatalf("hand-rated asset after the sidecar: %+v %+v", got, got.MyRating)
	}

	// A hostile packet fails nothing: it is answered, not applied, and the
	// asset says why. Its entity is never expanded.
	r = put(hostile, key, `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY boom "EXPANDED-ENTITY">]>
<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:Rating="5">
<dc:title><rdf:Alt><rdf:li xml:lang="x-default">&boom;</rdf:li></rdf:Alt></dc:title></rdf:Description></rdf:RDF></x:xmpmeta>`)
	expect(t, r, 200, "")
	if got := decode[sidecarReply](t, r); got.Applied || len(got.Warnings) == 0 || got.Decisions.Rating != 0 ||
		!strings.Contains(got.Warnings[len(got.Warnings)-1], "DOCTYPE") {
		t.Fatalf("PUT hostile sidecar: %s", r.body)
	}
	r = a.do("GET", "/v1/assets/"+hostile, key, nil)
	if got := decode[ratedAsset](t, r); got.MyRating != nil || got.IPTC["title"] != nil ||
		!strings.Contains(got.Flags["metadataWarning"].(string), "DOCTYPE") || bytes.Contains(r.body, []byte("EXPANDED")) {
		t.Fatalf("asset after a hostile sidecar: %s", r.body)
	}
	expect(t, a.do("GET", "/v1/assets/"+hostile+"/sidecar", key, nil), 404, "sidecar_not_found")

	// A value out of range is left out and named; the rest applies. A
	// good sidecar after it clears the sidecar's warning.
	r = put(hostile, key, strings.Replace(lightroomSidecar, `xmp:Rating="4"`, `xmp:Rating="9"`, 1))
	expect(t, r, 200, "")
	if got := decode[sidecarReply](t, r); !got.Applied || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "xmp:Rating") {
		t.Fatalf("PUT a sidecar rated 9: %s", r.body)
	}
	if got := asset(hostile); got.MyRating == nil || got.MyRating.Rating != nil || got.IPTC["title"] != "Harbour at dusk" ||
		!strings.Contains(got.Flags["metadataWarning"].(string), "xmp:Rating") {
		t.Fatalf("asset after a sidecar rated 9: %+v %+v", got, got.MyRating)
	}
	expect(t, put(hostile, key, lightroomSidecar), 200, "")
	if got := asset(hostile); got.Flags["metadataWarning"] != nil || *got.MyRating.Rating != 4 {
		t.Fatalf("asset after a good sidecar: %+v %+v", got, got.MyRating)
	}

	// Refusals.
	expect(t, put(hostile, key, strings.Repeat(" ", xmp.MaxPacket+1)), 413, "sidecar_too_large")
	expect(t, put(hostile, key, ""), 400, "empty_sidecar")
	expect(t, put(hostile, key, lightroomSidecar, "Content-Type", "application/json"), 415, "unsupported_media_type")
	expect(t, put(ingested, bob, lightroomSidecar), 404, "not_found")
	expect(t, a.do("GET", "/v1/assets/"+ingested+"/sidecar", bob, nil), 404, "not_found")

	// A sidecar put before finalize is applied at once, and the ingest
	// that follows leaves it: the photo's own packet (2, blue) does not
	// replace it.
	// A sidecar refused before finalize keeps its warning through the
	// ingest, which writes the photo's own.
	pending := a.prepare(key, project, ps[3:])
	for i, p := range pending {
		expect(t, a.put(p.UploadURL, p.Headers, ps[3+i].data), 201, "")
	}
	r = put(pending[0].AssetID, key, lightroomSidecar)
	expect(t, r, 200, "")
	sidecarApplied(pending[0].AssetID)
	expect(t, put(pending[1].AssetID, key, `<?xml version="1.0"?><!DOCTYPE x><x:xmpmeta xmlns:x="adobe:ns:meta/"/>`), 200, "")
	expect(t, a.finalize(key, project, pending, []string{ps[3].sum(), ps[4].sum()}), 200, "")
	waitCount(t, a, "the late photos' ingest", 2, `SELECT count(*) FROM assets WHERE id IN ($1, $2) AND ingested_at IS NOT NULL`,
		pending[0].AssetID, pending[1].AssetID)
	sidecarApplied(pending[0].AssetID)
	if w, _ := asset(pending[1].AssetID).Flags["metadataWarning"].(string); !strings.Contains(w, "XMP sidecar: ") || !strings.Contains(w, "DOCTYPE") {
		t.Fatalf("the refused sidecar's warning after the ingest: %q", w)
	}
}
