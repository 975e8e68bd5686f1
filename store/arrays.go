package store

import (
	"database/sql/driver"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// Strings is a Postgres text[] column, so callers handle a plain slice.
type Strings []string

// Scan reads a text[].
func (a *Strings) Scan(src any) error { return (*pq.StringArray)(a).Scan(src) }

// Value writes a text[]; nil is NULL.
func (a Strings) Value() (driver.Value, error) { return pq.StringArray(a).Value() }

// UUIDs is a Postgres uuid[] column.
type UUIDs []uuid.UUID

// Scan reads a uuid[].
func (a *UUIDs) Scan(src any) error {
	var s pq.StringArray
	if err := s.Scan(src); err != nil {
		return err
	}
	if s == nil {
		*a = nil
		return nil
	}
	out := make(UUIDs, len(s))
	for i, v := range s {
		id, err := uuid.Parse(v)
		if err != nil {
			return err
		}
		out[i] = id
	}
	*a = out
	return nil
}

// Value writes a uuid[]; nil is NULL.
func (a UUIDs) Value() (driver.Value, error) {
	if a == nil {
		return nil, nil
	}
	s := make(pq.StringArray, len(a))
	for i, id := range a {
		s[i] = id.String()
	}
	return s.Value()
}
