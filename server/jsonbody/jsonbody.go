// Package jsonbody provides the strict reading of JSON request bodies the
// API answers with: Decode refuses unknown fields, trailing data, values
// of the wrong type and text Postgres cannot store, each as a Problem with
// a stable code that names the field at fault ("files[2].byteSize"), found
// by walking the body against the destination's type by reflection.
package jsonbody

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Problem is a refused body: the HTTP status, the stable code and the
// message to answer with, and details (the field at fault, an offset).
type Problem struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
}

func (p *Problem) Error() string { return p.Code + ": " + p.Message }

func problem(status int, code, format string, args ...any) *Problem {
	return &Problem{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// with adds a detail to p.
func (p *Problem) with(key string, v any) *Problem {
	if p.Details == nil {
		p.Details = map[string]any{}
	}
	p.Details[key] = v
	return p
}

// Decode reads r's body into dst strictly: a body that is not labelled
// JSON is unsupported_media_type; unknown fields, trailing data and
// malformed JSON are invalid_json; a value of the wrong type, and text
// Postgres cannot store, are validation_failed naming the field. Every
// refusal is a *Problem; a body cut short by http.MaxBytesReader is
// body_too_large.
func Decode(r *http.Request, dst any) error {
	ct := r.Header.Get("Content-Type")
	if !IsJSON(ct) && (ct != "" || r.ContentLength != 0) {
		return problem(http.StatusUnsupportedMediaType, "unsupported_media_type", "Send the body as JSON, with Content-Type: application/json.")
	}
	// raw keeps what the decoder read, to find the field a problem is in.
	var raw bytes.Buffer
	dec := json.NewDecoder(io.TeeReader(r.Body, &raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	// The decoder reads ahead; value is the JSON value it decoded.
	value := raw.Bytes()[:dec.InputOffset()]
	if err == nil && dec.More() {
		err = errors.New("unexpected data after the JSON value")
	}
	if err == nil {
		if field, problem := badText(value); problem != "" {
			return FieldError(field, problem)
		}
		return nil
	}
	var (
		syntax   *json.SyntaxError
		typ      *json.UnmarshalTypeError
		tooLarge *http.MaxBytesError
	)
	switch {
	case errors.As(err, &tooLarge):
		return problem(http.StatusRequestEntityTooLarge, "body_too_large", "The request body is larger than %d bytes.", tooLarge.Limit)
	case errors.Is(err, io.EOF):
		return problem(http.StatusBadRequest, "invalid_json", "The request body is empty; send a JSON object.")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return problem(http.StatusBadRequest, "invalid_json", "The JSON ends too soon.")
	case errors.As(err, &syntax):
		return problem(http.StatusBadRequest, "invalid_json", "Malformed JSON at byte %d: %s.", syntax.Offset, syntax.Error()).with("offset", syntax.Offset)
	case errors.As(err, &typ):
		if field, t := misfit(value, reflect.TypeOf(dst), ""); t != nil {
			return FieldError(field, "must be "+jsonKind(t))
		}
		return FieldError(typ.Field, "must be "+jsonKind(typ.Type))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return problem(http.StatusBadRequest, "invalid_json", "Unknown field %q.", name).with("field", name)
	default:
		var p *Problem
		if errors.As(err, &p) {
			return p
		}
		// Types that read themselves (UUIDs, times) fail without naming
		// the field.
		if field, t := misfit(value, reflect.TypeOf(dst), ""); t != nil {
			return FieldError(field, "must be "+jsonKind(t))
		}
		return problem(http.StatusBadRequest, "invalid_json", "The body cannot be read as JSON.")
	}
}

// misfit finds the first value of the JSON value raw that does not decode
// into its place in t, and names its path ("files[2].byteSize") and the
// type wanted there; t is nil when none is found. The decoder's own errors
// name no index, and none at all for the types that read themselves.
func misfit(raw []byte, t reflect.Type, path string) (string, reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if o, ok := reflect.Zero(t).Interface().(interface{ ValueType() reflect.Type }); ok {
		return misfit(raw, o.ValueType(), path)
	}
	if json.Unmarshal(raw, reflect.New(t).Interface()) == nil {
		return "", nil
	}
	if p := reflect.PointerTo(t); p.Implements(jsonUnmarshaler) || p.Implements(textUnmarshaler) {
		return path, t
	}
	var (
		obj map[string]json.RawMessage
		arr []json.RawMessage
	)
	switch t.Kind() {
	case reflect.Struct:
		if json.Unmarshal(raw, &obj) != nil {
			return path, t
		}
		for _, f := range jsonFields(t) {
			if v, ok := member(obj, f.Name); ok {
				if field, ft := misfit(v, f.Type, fieldPath(path, f.Name)); ft != nil {
					return field, ft
				}
			}
		}
	case reflect.Map:
		if json.Unmarshal(raw, &obj) != nil {
			return path, t
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if field, ft := misfit(obj[k], t.Elem(), fieldPath(path, k)); ft != nil {
				return field, ft
			}
		}
	case reflect.Slice, reflect.Array:
		if json.Unmarshal(raw, &arr) != nil {
			return path, t
		}
		for i, v := range arr {
			if field, ft := misfit(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); ft != nil {
				return field, ft
			}
		}
	default:
		return path, t
	}
	return "", nil
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// jsonFields lists the fields the JSON decoder fills in struct type t,
// each named as in JSON, those of embedded structs included.
func jsonFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			out = append(out, jsonFields(f.Type)...)
		case f.IsExported():
			f.Name = cmp.Or(name, f.Name)
			out = append(out, f)
		}
	}
	return out
}

// member is obj's value for a field name, which the decoder matches
// regardless of case.
func member(obj map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	if v, ok := obj[name]; ok {
		return v, true
	}
	for k, v := range obj {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// badText names the first string or object key of the JSON value raw that
// Postgres cannot store, and why: NUL, in text or jsonb, or half a
// surrogate pair, which the decoder turns into U+FFFD but jsonb, given the
// escape as sent, refuses. Only a value with \u escapes is walked.
func badText(raw []byte) (field, problem string) {
	if !bytes.Contains(raw, []byte(`\u`)) {
		return "", ""
	}
	type level struct {
		path    string
		array   bool
		n       int    // the next element's index
		key     string // the member being read
		wantKey bool
	}
	var stack []*level
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // a number too large for float64 is no error here
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return "", ""
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			if stack = stack[:len(stack)-1]; len(stack) == 0 {
				return "", ""
			}
			continue
		}
		path := ""
		if len(stack) > 0 {
			switch top := stack[len(stack)-1]; {
			case top.array:
				path = fmt.Sprintf("%s[%d]", top.path, top.n)
				top.n++
			case top.wantKey:
				top.key, _ = tok.(string)
				path = top.path // a key is named by its object
			default:
				path = fieldPath(top.path, top.key)
			}
		}
		if s, ok := tok.(string); ok {
			switch {
			case strings.ContainsRune(s, 0):
				return path, "must not contain the NUL character (\\u0000)"
			case halfSurrogate(raw[start:dec.InputOffset()]):
				return path, "must not contain an unpaired surrogate (\\ud800)"
			}
		}
		if len(stack) > 0 && !stack[len(stack)-1].array {
			stack[len(stack)-1].wantKey = !stack[len(stack)-1].wantKey
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &level{path: path, array: d == '[', wantKey: d == '{'})
		}
	}
}

// halfSurrogate reports whether the JSON text lit escapes one half of a
// UTF-16 surrogate pair without the other.
func halfSurrogate(lit []byte) bool {
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		i++ // the escaped character; a \u escape's four digits follow
		r, ok := escapedRune(lit, i)
		if !ok {
			continue
		}
		i += 4
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return true
		case r >= 0xd800 && r <= 0xdbff:
			low, ok := escapedRune(lit, i+2)
			if !ok || lit[i+1] != '\\' || low < 0xdc00 || low > 0xdfff {
				return true
			}
			i += 6
		}
	}
	return false
}

// escapedRune reads the \u escape whose u is lit[i].
func escapedRune(lit []byte, i int) (rune, bool) {
	if i+4 >= len(lit) || lit[i] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(lit[i+1:i+5]), 16, 16)
	return rune(n), err == nil
}

// fieldPath is the path of member name of the object at path, as answers
// name fields ("filters.camera"); the body itself is at "".
func fieldPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// FieldError is validation_failed naming one field and its problem.
func FieldError(field, what string) *Problem {
	if field == "" {
		field = "(body)"
	}
	p := problem(http.StatusBadRequest, "validation_failed", "%s %s.", field, what)
	p.Details = map[string]any{"fields": map[string]string{field: what}}
	return p
}

// IsText reports whether s is text Postgres can store: UTF-8 without NUL.
// Paths, queries and headers may hold any bytes.
func IsText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// IsJSON reports whether a Content-Type names JSON (application/json or a
// +json type). Browsers let any page send text/plain, form and multipart
// bodies to another site without asking; JSON they do not.
func IsJSON(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && (t == "application/json" || strings.HasSuffix(t, "+json"))
}

// jsonKind names what a JSON client sends for a Go type.
func jsonKind(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[uuid.UUID]():
		return "a UUID"
	case reflect.TypeFor[time.Time]():
		return "a time in RFC 3339 form, such as 2024-05-01T14:30:00Z"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// Optional is a JSON field that tells absent from null, for PATCH.
type Optional[T any] struct {
	Set   bool
	Value *T
}

// ValueType is T, for naming a value that does not decode as one.
func (Optional[T]) ValueType() reflect.Type { return reflect.TypeFor[T]() }

// UnmarshalJSON records that the field was sent, and its value or null.
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Value = &v
	return nil
}
