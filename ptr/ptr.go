// Package ptr provides Value, the one way Lightbox reads a pointer that
// may be nil (a nullable column, an optional field).
package ptr

// Value is what p points at, or T's zero value when p is nil.
func Value[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
