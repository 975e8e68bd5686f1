//go:build !linux

package backup

// lowerPriority does nothing where threads have no nice value of their
// own: the copying runs at the process's priority.
func lowerPriority() {}
