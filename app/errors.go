package app

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"lightbox/store"
)

// FieldErrors are a request's invalid fields, each with what is wrong
// with it, keyed by the field's path (files[2].byteSize).
type FieldErrors map[string]string

// Add notes what is wrong with field.
func (f FieldErrors) Add(field, problem string) { f[field] = problem }

// Err is f as an error, or nil when no field is wrong.
func (f FieldErrors) Err() error {
	if len(f) == 0 {
		return nil
	}
	return f
}

func (f FieldErrors) Error() string {
	parts := make([]string, 0, len(f))
	for k, v := range f {
		parts = append(parts, k+" "+v)
	}
	sort.Strings(parts)
	return "invalid: " + strings.Join(parts, "; ")
}

// UnsupportedError refuses files of a type the service does not take,
// each field naming the type that was sent.
type UnsupportedError struct{ Fields FieldErrors }

func (e *UnsupportedError) Error() string { return fmt.Sprintf("unsupported types: %v", e.Fields) }

// QuotaUse names what a request would have taken a quota for.
type QuotaUse string

// What a QuotaError refused.
const (
	ForUpload QuotaUse = "upload"
	ForImport QuotaUse = "import"
	ForExport QuotaUse = "export"
)

// QuotaError refuses a request that would pass one of the user's quotas.
type QuotaError struct {
	*store.QuotaError
	For QuotaUse
	// NextExpiry is when the first upload in flight expires, freeing a
	// place under the files-in-flight quota (nil: none is in flight).
	NextExpiry *time.Time
}

func (e *QuotaError) Unwrap() error { return e.QuotaError }
