package chain_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/chain"
	"lightbox/store"
)

func samplePayload() chain.Payload {
	return chain.Payload{
		Attestation: chain.Statement{
			PI: "0b9d4a3e-0c43-4c3c-9a8e-3f1f5b7f3d21", Ver: 1,
			CID: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Op: "ingest", Vis: "private",
			TS: "2024-05-01T12:30:00.123456Z", PrevTx: "", PrevCID: "", Seq: 1,
		},
		Manifest: chain.Manifest{AssetID: "6a3c1f0e-5d7b-4e2a-9c1d-2b3e4f5a6b7c", Filename: "IMG_0001.JPG", ByteSize: 4821337, ContentType: "image/jpeg"},
	}
}

// The canonical form is fixed byte for byte: sorted keys, no whitespace.
func TestPayloadCanonicalBytes(t *testing.T) {
	got, err := samplePayload().Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"attestation":{"cid":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","op":"ingest",` +
		`"pi":"0b9d4a3e-0c43-4c3c-9a8e-3f1f5b7f3d21","prev_cid":"","prev_tx":"","seq":1,"ts":"2024-05-01T12:30:00.123456Z",` +
		`"ver":1,"vis":"private"},"manifest":{"asset_id":"6a3c1f0e-5d7b-4e2a-9c1d-2b3e4f5a6b7c","byte_size":4821337,` +
		`"content_type":"image/jpeg","filename":"IMG_0001.JPG"}}`
	if string(got) != want {
		t.Fatalf("canonical payload\n got %s\nwant %s", got, want)
	}
}

// Encoding, decoding and encoding again gives the same bytes, whatever the
// strings hold.
func TestPayloadReencodingIsStable(t *testing.T) {
	names := []string{
		"plain.jpg", `quote " and back\slash.jpg`, "tab\tnew\nline\rcr\bbs\fff.jpg", "ctl\x01\x1f\x7f.jpg",
		"<html>&amp;.jpg", "line\u2028sep\u2029.jpg", "café 東京 😀.heic", "",
	}
	for _, name := range names {
		p := samplePayload()
		p.Manifest.Filename = name
		b, err := p.Canonical()
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		again, err := chain.Canonicalize(b)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("%q: canonicalizing the canonical form changed it (%v)\n%s\n%s", name, err, b, again)
		}
		back, err := chain.ParsePayload(b)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if back != p {
			t.Fatalf("%q: decoded %+v, want %+v", name, back, p)
		}
		// Any JSON encoder's output of the same value canonicalizes to it.
		std, _ := json.MarshalIndent(p, "", "  ")
		if c, err := chain.Canonicalize(std); err != nil || !bytes.Equal(c, b) {
			t.Fatalf("%q: encoding/json's form canonicalizes to\n%s\nwant\n%s", name, c, b)
		}
	}
}

func TestCanonicalStringEscapes(t *testing.T) {
	got, err := chain.AppendCanonical(nil, "a\"b\\c\x00\x1f\b\t\n\f\r\u2028<é")
	if err != nil {
		t.Fatal(err)
	}
	if want := `"a\"b\\c\u0000\u001f\b\t\n\f\r` + "\u2028<é\""; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if _, err := chain.AppendCanonical(nil, "bad \xff utf-8"); err == nil {
		t.Fatal("invalid UTF-8 was encoded")
	}
}

// Member names sort by UTF-16 code units, as RFC 8785 says: U+1F600 (a
// surrogate pair, 0xD83D…) sorts before U+FB01 although its UTF-8 is larger.
func TestCanonicalKeyOrder(t *testing.T) {
	got, err := chain.Canonicalize([]byte(`{"b":1,"a":{"z":true,"y":null},"\ufb01":2,"😀":3,"A":[3,1]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"A":[3,1],"a":{"y":null,"z":true},"b":1,"😀":3,"ﬁ":2}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	for _, in := range []string{`{"a":1.5}`, `{"a":1e3}`, `{"a":99999999999999999999}`, `{"a":1} {}`, `{"a":`, ``} {
		if out, err := chain.Canonicalize([]byte(in)); err == nil {
			t.Errorf("Canonicalize(%s) = %s, want an error", in, out)
		}
	}
}

func TestParsePayloadRejectsOtherSpellings(t *testing.T) {
	good, _ := samplePayload().Canonical()
	cases := map[string]string{
		"whitespace":     strings.Replace(string(good), `":`, `": `, 1),
		"unsorted":       unsorted(string(good)),
		"extra field":    strings.Replace(string(good), `"ver":1,`, `"ver":1,"x":1,`, 1),
		"missing field":  strings.Replace(string(good), `"op":"ingest",`, ``, 1),
		"upper-case key": strings.Replace(string(good), `"op":`, `"OP":`, 1),
		"duplicate key":  strings.Replace(string(good), `"op":"ingest",`, `"op":"ingest","op":"ingest",`, 1),
		"negative zero":  strings.Replace(string(good), `"seq":1`, `"seq":-0`, 1),
	}
	for name, in := range cases {
		if _, err := chain.ParsePayload([]byte(in)); err == nil {
			t.Errorf("%s: ParsePayload accepted %s", name, in)
		}
	}
	if _, err := chain.ParsePayload(good); err != nil {
		t.Fatal(err)
	}
}

func TestSignIsDeterministicAndChecks(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	item := store.ClaimedAttestation{
		ID: 1, ProjectID: uuid.New(), CID: strings.Repeat("ab", 32), Op: "ingest", Visibility: "private",
		TS: time.Date(2024, 5, 1, 14, 30, 0, 123456789, time.FixedZone("CEST", 2*3600)),
	}
	prev := chain.Link{Seq: 41, TxID: strings.Repeat("1", 64), CID: strings.Repeat("2", 64)}
	p := chain.NewPayload(item, prev)
	if p.Attestation.Seq != 42 || p.Attestation.PrevTx != prev.TxID || p.Attestation.TS != "2024-05-01T12:30:00.123456Z" || p.Manifest.AssetID != "" {
		t.Fatalf("payload = %+v", p)
	}
	a, err := chain.Sign(key, p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := chain.Sign(key, p)
	// Ed25519 is deterministic: re-signing the same link gives the same
	// transaction, so a ledger sees a repeat, not a rival.
	if a.TxID != b.TxID {
		t.Fatal("signing the same payload twice gave two tx_ids")
	}
	if reason, msg := chain.Check(pub, a); reason != "" {
		t.Fatalf("check: %s %s", reason, msg)
	}
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	if reason, _ := chain.Check(other, a); reason != chain.ReasonBadSignature {
		t.Fatalf("check under another key = %q, want bad_signature", reason)
	}
	a.Seq = 43
	if reason, _ := chain.Check(pub, a); reason != chain.ReasonPayloadMismatch {
		t.Fatalf("check with a changed seq = %q, want payload_mismatch", reason)
	}
}

// unsorted puts the manifest before the attestation.
func unsorted(canonical string) string {
	att, man, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(canonical, `{"attestation":`), "}"), `,"manifest":`)
	return `{"manifest":` + man + `,"attestation":` + att + `}`
}
