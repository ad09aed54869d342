// Package syncbuf is a bytes.Buffer safe for concurrent use: a log or a
// process's output written by some goroutines and read by a test.
package syncbuf

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
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

// WaitFor waits until the buffer holds s, polling every 10 ms, and fails
// tb, showing what it holds, if it does not within d.
func (s *Buffer) WaitFor(tb testing.TB, what string, d time.Duration) {
	tb.Helper()
	for deadline := time.Now().Add(d); !strings.Contains(s.String(), what); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("no %q within %v in:\n%s", what, d, s)
		}
	}
}
