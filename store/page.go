package store

import (
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ErrBadCursor is returned for a cursor this service did not issue.
var ErrBadCursor = errors.New("bad cursor")

// Cursor is a keyset position: the (time, id) of the last row of a page,
// or for a list in another order its (key, id) and that order's name.
// Keyset pages stay correct while rows are added, unlike offsets.
type Cursor struct {
	Time  time.Time
	ID    uuid.UUID
	Order string // the order the cursor belongs to; empty for a list's own
	Key   string // the sort key when it is text
}

// Encode makes the opaque string clients pass back.
func (c Cursor) Encode() string {
	s := c.Time.UTC().Format(time.RFC3339Nano) + "|" + c.ID.String()
	if c.Order != "" {
		s += "|" + c.Order + "|" + c.Key // the key last: it may hold anything
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// DecodeCursor reads a cursor; the empty string is the first page.
func DecodeCursor(s string) (*Cursor, error) {
	if s == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, ErrBadCursor
	}
	parts := strings.SplitN(string(raw), "|", 4)
	if len(parts) != 2 && len(parts) != 4 {
		return nil, ErrBadCursor
	}
	ts, id := parts[0], parts[1]
	var order, key string
	if len(parts) == 4 {
		if order, key = parts[2], parts[3]; order == "" {
			return nil, ErrBadCursor
		}
	}
	// Cursors are issued in UTC; another offset may be one Postgres
	// cannot read.
	t, err := time.Parse(time.RFC3339Nano, ts)
	if _, off := t.Zone(); err != nil || off != 0 {
		return nil, ErrBadCursor
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return nil, ErrBadCursor
	}
	return &Cursor{Time: t, ID: u, Order: order, Key: key}, nil
}

// Page is one page of rows and the cursor of the next, if any.
type Page[T any] struct {
	Items []T
	Next  *Cursor
}

// pageOf trims the extra row a query fetched to learn whether another page follows.
func pageOf[T any](rows []T, limit int, key func(T) Cursor) Page[T] {
	p := Page[T]{Items: rows}
	if len(rows) > limit {
		p.Items = rows[:limit]
		c := key(rows[limit-1])
		p.Next = &c
	}
	if p.Items == nil {
		p.Items = []T{}
	}
	return p
}
