package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/store"
)

// decodeJSON reads the body into dst strictly: a body that is not labelled
// JSON is unsupported_media_type; unknown fields, trailing data and
// malformed JSON are invalid_json; a value of the wrong type, and text
// holding the NUL character, are validation_failed naming the field.
func decodeJSON(c *gin.Context, dst any) error {
	ct := c.GetHeader("Content-Type")
	if !isJSON(ct) && (ct != "" || c.Request.ContentLength != 0) {
		return apiError(http.StatusUnsupportedMediaType, "unsupported_media_type", "Send the body as JSON, with Content-Type: application/json.")
	}
	// raw keeps what the decoder read, to find the field a problem is in.
	var raw bytes.Buffer
	dec := json.NewDecoder(io.TeeReader(c.Request.Body, &raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil && dec.More() {
		err = errors.New("unexpected data after the JSON value")
	}
	if err == nil {
		if field, ok := nulField(raw.Bytes()); ok {
			return fieldError(field, "must not contain the NUL character (\\u0000)")
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
		return apiError(http.StatusRequestEntityTooLarge, "body_too_large", "The request body is larger than %d bytes.", tooLarge.Limit)
	case errors.Is(err, io.EOF):
		return apiError(http.StatusBadRequest, "invalid_json", "The request body is empty; send a JSON object.")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apiError(http.StatusBadRequest, "invalid_json", "The JSON ends too soon.")
	case errors.As(err, &syntax):
		return apiError(http.StatusBadRequest, "invalid_json", "Malformed JSON at byte %d: %s.", syntax.Offset, syntax.Error()).with("offset", syntax.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(body)"
		}
		return apiError(http.StatusBadRequest, "validation_failed", "%s must be %s.", field, jsonKind(typ.Type.String())).
			with("fields", map[string]string{field: "must be " + jsonKind(typ.Type.String())})
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return apiError(http.StatusBadRequest, "invalid_json", "Unknown field %q.", name).with("field", name)
	default:
		var fe *Error
		if errors.As(err, &fe) {
			return fe
		}
		return apiError(http.StatusBadRequest, "invalid_json", "The body cannot be read as JSON.")
	}
}

// nulField names the first string or object key of the JSON value at the
// start of raw that holds the NUL character: Postgres stores it neither in
// text nor in jsonb. Only a body with the \u0000 escape is walked.
func nulField(raw []byte) (string, bool) {
	if !bytes.Contains(raw, []byte(`\u0000`)) {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return "", false
	}
	return nulIn(v, "")
}

func nulIn(v any, path string) (string, bool) {
	switch v := v.(type) {
	case string:
		return path, strings.ContainsRune(v, 0)
	case []any:
		for i, e := range v {
			if p, ok := nulIn(e, fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, true
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if strings.ContainsRune(k, 0) {
				return path, true
			}
			if p, ok := nulIn(v[k], fieldPath(path, k)); ok {
				return p, true
			}
		}
	}
	return "", false
}

// fieldPath is the path of member name of the object at path, as answers
// name fields ("filters.camera"); the body itself is at "".
func fieldPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// fieldError is validation_failed naming one field and its problem.
func fieldError(field, problem string) *Error {
	if field == "" {
		field = "(body)"
	}
	return apiError(http.StatusBadRequest, "validation_failed", "%s %s.", field, problem).
		with("fields", map[string]string{field: problem})
}

// isJSON reports whether a Content-Type names JSON (application/json or a
// +json type). Browsers let any page send text/plain, form and multipart
// bodies to another site without asking; JSON they do not.
func isJSON(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && (t == "application/json" || strings.HasSuffix(t, "+json"))
}

// jsonKind names a Go type the way a JSON client thinks of it.
func jsonKind(goType string) string {
	switch {
	case strings.Contains(goType, "string"), strings.Contains(goType, "Time"), strings.Contains(goType, "UUID"):
		return "a string"
	case strings.Contains(goType, "int"), strings.Contains(goType, "float"):
		return "a number"
	case strings.Contains(goType, "bool"):
		return "true or false"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return "an object"
}

// pathID reads a UUID path parameter; anything else cannot name a resource.
func pathID(c *gin.Context, name string) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param(name))
	if err != nil {
		return uuid.Nil, errNotFound()
	}
	return id, nil
}

// owned reads the caller's resource named by the path's id with get, which
// finds it only among what owner has; anything else is not found.
func owned[T any](c *gin.Context, get func(ctx context.Context, owner, id uuid.UUID) (*T, error)) (*T, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, err
	}
	return get(c.Request.Context(), principal(c).ID, id)
}

// A page holds at most maxPageSize items. A client walks pages one after
// another (each needs the cursor of the one before), so a project of
// 100,000 photos takes 100 round trips rather than 500.
const (
	defaultPageSize = 50
	maxPageSize     = 1000
)

// pageParams reads ?cursor=&limit=.
func pageParams(c *gin.Context) (*store.Cursor, int, error) {
	limit := defaultPageSize
	if s := c.Query("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPageSize {
			return nil, 0, apiError(http.StatusBadRequest, "validation_failed", "limit must be a whole number from 1 to %d.", maxPageSize).
				with("fields", map[string]string{"limit": "must be 1 to " + strconv.Itoa(maxPageSize)})
		}
		limit = n
	}
	cur, err := store.DecodeCursor(c.Query("cursor"))
	return cur, limit, err
}

type pageInfo struct {
	NextCursor *string `json:"nextCursor"`
}

type paged[T any] struct {
	Items    []T      `json:"items"`
	PageInfo pageInfo `json:"pageInfo"`
}

func toPaged[S, T any](p store.Page[S], conv func(S) T) paged[T] {
	out := paged[T]{Items: make([]T, len(p.Items))}
	for i, s := range p.Items {
		out.Items[i] = conv(s)
	}
	if p.Next != nil {
		next := p.Next.Encode()
		out.PageInfo.NextCursor = &next
	}
	return out
}

// utcPtr is t in UTC, as answers show times; nil stays nil.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// optional is a JSON field that tells absent from null, for PATCH.
type optional[T any] struct {
	Set   bool
	Value *T
}

func (o *optional[T]) UnmarshalJSON(b []byte) error {
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

// parseAssetIDs parses the asset ids of a request, at most limit of them;
// none is nil.
func parseAssetIDs(errs fieldErrors, raw []string, limit int) []uuid.UUID {
	if len(raw) == 0 {
		return nil
	}
	if len(raw) > limit {
		errs.add("assetIds", fmt.Sprintf("must list at most %d assets", limit))
		return nil
	}
	ids := make([]uuid.UUID, len(raw))
	seen := make(map[uuid.UUID]bool, len(raw))
	for i, s := range raw {
		id, err := uuid.Parse(s)
		switch {
		case err != nil:
			errs.add(fmt.Sprintf("assetIds[%d]", i), "must be an asset id (a UUID)")
		case seen[id]:
			errs.add(fmt.Sprintf("assetIds[%d]", i), "is listed twice")
		}
		seen[id] = true
		ids[i] = id
	}
	return ids
}

// foreignAssets turns a store.ForeignAssetsError into the answer that names
// them under field; other errors pass through.
func foreignAssets(err error, field string) error {
	var foreign *store.ForeignAssetsError
	if !errors.As(err, &foreign) {
		return err
	}
	return apiError(http.StatusBadRequest, "validation_failed", "%d of the assets are not in this project; nothing was changed.", len(foreign.IDs)).
		with("fields", map[string]string{field: "must name assets of this project"}).with("assetIds", foreign.IDs)
}
