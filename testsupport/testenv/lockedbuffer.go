package testenv

import (
	"bytes"
	"sync"
)

// LockedBuffer is a bytes.Buffer safe to write from several goroutines
// (a process's output, a server's log) while a test reads it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
