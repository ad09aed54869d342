// Package syncbuf is a bytes.Buffer safe for concurrent use: a log or a
// process's output written by some goroutines and read by a test.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a mutex-guarded bytes.Buffer; the zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
