package chain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// PayloadVersion is the "ver" of the payloads this package signs.
const PayloadVersion = 1

// TimeFormat is how "ts" is written: RFC 3339 in UTC with exactly six
// fractional digits, Postgres's precision, so a time has one spelling.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// Genesis is prev_tx and prev_cid of the first attestation (seq 1): empty,
// as the head row holds before anything was attested.
const Genesis = ""

// Payload is what gets signed. Its canonical JSON is
//
//	{"attestation":{"cid":…,"op":…,"pi":…,"prev_cid":…,"prev_tx":…,"seq":…,"ts":…,"ver":1,"vis":…},
//	 "manifest":{"asset_id":…,"byte_size":…,"content_type":…,"filename":…}}
//
// (on one line). The attestation part is the chain; the manifest describes
// the original as it was when signed: its asset id, the filename it was
// uploaded as, its size in bytes and its content type (empty strings and 0
// when the asset was deleted before signing).
type Payload struct {
	Attestation Statement `json:"attestation"`
	Manifest    Manifest  `json:"manifest"`
}

// Statement is the chain part of a payload.
type Statement struct {
	PI      string `json:"pi"`       // project id
	Ver     int64  `json:"ver"`      // PayloadVersion
	CID     string `json:"cid"`      // lowercase hex SHA-256 of the original
	Op      string `json:"op"`       // "ingest"
	Vis     string `json:"vis"`      // visibility: "private" or "public"
	TS      string `json:"ts"`       // when the op happened, TimeFormat
	PrevTx  string `json:"prev_tx"`  // tx_id of seq-1, Genesis for seq 1
	PrevCID string `json:"prev_cid"` // cid of seq-1, Genesis for seq 1
	Seq     int64  `json:"seq"`      // position in the chain, from 1
}

// Manifest describes the attested original.
type Manifest struct {
	AssetID     string `json:"asset_id"`
	Filename    string `json:"filename"`
	ByteSize    int64  `json:"byte_size"`
	ContentType string `json:"content_type"`
}

// Canonical encodes p in the canonical form that is signed.
func (p Payload) Canonical() ([]byte, error) {
	s, m := p.Attestation, p.Manifest
	return AppendCanonical(nil, map[string]any{
		"attestation": map[string]any{
			"pi": s.PI, "ver": s.Ver, "cid": s.CID, "op": s.Op, "vis": s.Vis, "ts": s.TS,
			"prev_tx": s.PrevTx, "prev_cid": s.PrevCID, "seq": s.Seq,
		},
		"manifest": map[string]any{
			"asset_id": m.AssetID, "filename": m.Filename, "byte_size": m.ByteSize, "content_type": m.ContentType,
		},
	})
}

// ParsePayload decodes a signed payload, insisting that it is canonical and
// has exactly the fields of this version, so one payload has one encoding.
func ParsePayload(b []byte) (Payload, error) {
	var p Payload
	c, err := Canonicalize(b)
	if err != nil {
		return p, err
	}
	if !bytes.Equal(c, b) {
		return p, errors.New("payload is not in canonical form")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, err
	}
	// Re-encoding catches a missing field, which decoding alone lets pass.
	again, err := p.Canonical()
	if err != nil {
		return p, err
	}
	if !bytes.Equal(again, b) {
		return p, errors.New("payload fields differ from version 1")
	}
	return p, nil
}

// Canonicalize re-encodes any JSON text in canonical form. It rejects
// numbers that are not integers, and text that is not one JSON value.
//
// The canonical form is RFC 8785 (JCS) restricted to objects, arrays,
// strings, integers, booleans and null: no whitespace; object members
// sorted by their names' UTF-16 code units; strings escape only '"', '\'
// and control characters below U+0020 (as \b \t \n \f \r, others as
// \u00xx in lowercase hex), everything else written as UTF-8; integers in
// decimal, no sign on zero, no exponent, within int64.
func Canonicalize(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return AppendCanonical(nil, v)
}

// AppendCanonical appends v's canonical encoding to buf. v is built of
// map[string]any, []any, string, int, int64, json.Number holding an
// integer, bool and nil.
func AppendCanonical(buf []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, v), nil
	case int:
		return strconv.AppendInt(buf, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(buf, v, 10), nil
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("number %s is not an integer within 64 bits", v)
		}
		return strconv.AppendInt(buf, n, 10), nil
	case string:
		return appendString(buf, v)
	case []any:
		buf = append(buf, '[')
		for i, e := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = AppendCanonical(buf, e); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendString(buf, k); err != nil {
				return nil, err
			}
			buf = append(buf, ':')
			if buf, err = AppendCanonical(buf, v[k]); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	}
	return nil, fmt.Errorf("value of type %T has no canonical form", v)
}

func appendString(buf []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("string is not valid UTF-8")
	}
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c == '\b':
			buf = append(buf, '\\', 'b')
		case c == '\t':
			buf = append(buf, '\\', 't')
		case c == '\n':
			buf = append(buf, '\\', 'n')
		case c == '\f':
			buf = append(buf, '\\', 'f')
		case c == '\r':
			buf = append(buf, '\\', 'r')
		case c < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			buf = append(buf, c)
		}
	}
	return append(buf, '"'), nil
}

// compareUTF16 orders names as RFC 8785 does; it differs from byte order
// only for characters above U+FFFF against U+E000–U+FFFF.
func compareUTF16(a, b string) int {
	if isASCII(a) && isASCII(b) {
		return strings.Compare(a, b)
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// FormatTime writes t as a payload's "ts".
func FormatTime(t time.Time) string { return t.UTC().Truncate(time.Microsecond).Format(TimeFormat) }
