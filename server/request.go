package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/server/jsonbody"
	"lightbox/store"
)

// decodeJSON reads the body into dst strictly (jsonbody.Decode) and
// answers a refusal as the API's Error.
func decodeJSON(c *gin.Context, dst any) error {
	err := jsonbody.Decode(c.Request, dst)
	var p *jsonbody.Problem
	if errors.As(err, &p) {
		return &Error{Status: p.Status, Code: p.Code, Message: p.Message, Details: p.Details}
	}
	return err
}

// fieldError is validation_failed naming one field and its problem.
func fieldError(field, problem string) *Error {
	if field == "" {
		field = "(body)"
	}
	return apiError(http.StatusBadRequest, "validation_failed", "%s %s.", field, problem).
		with("fields", map[string]string{field: problem})
}

// isText reports whether s is text Postgres can store (jsonbody.IsText).
func isText(s string) bool { return jsonbody.IsText(s) }

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

// checkOffset refuses a time whose UTC offset Postgres cannot read.
func checkOffset(errs app.FieldErrors, field string, t *time.Time) {
	if msg := app.CheckOffset(t); msg != "" {
		errs.Add(field, msg)
	}
}

// optional is a JSON field that tells absent from null, for PATCH.
type optional[T any] = jsonbody.Optional[T]

// parseAssetIDs parses the asset ids of a request, at most limit of them;
// none is nil.
func parseAssetIDs(errs app.FieldErrors, raw []string, limit int) []uuid.UUID {
	if len(raw) == 0 {
		return nil
	}
	if len(raw) > limit {
		errs.Add("assetIds", fmt.Sprintf("must list at most %d assets", limit))
		return nil
	}
	ids := make([]uuid.UUID, len(raw))
	seen := make(map[uuid.UUID]bool, len(raw))
	for i, s := range raw {
		id, err := uuid.Parse(s)
		switch {
		case err != nil:
			errs.Add(fmt.Sprintf("assetIds[%d]", i), "must be an asset id (a UUID)")
		case seen[id]:
			errs.Add(fmt.Sprintf("assetIds[%d]", i), "is listed twice")
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
