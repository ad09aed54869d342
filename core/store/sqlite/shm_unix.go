//go:build unix

package sqlite

import (
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// commits watches the WAL-index header at the start of the database's -shm
// file, which SQLite shares between every connection of every process
// (https://www.sqlite.org/walformat.html, "The WAL-Index Header"). Its
// iChange field, at byte 8, is incremented by every commit. Loading it is
// a memory read, so the cache epoch needs a statement only after a commit.
//
// SQLite truncates the -shm file only when the first connection opens the
// database, which cannot happen while this process holds connections open;
// the mapping is released before they are closed.
type commits struct {
	mem []byte
}

func watchCommits(dbPath string) *commits {
	f, err := os.Open(dbPath + "-shm")
	if err != nil {
		return nil
	}
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &commits{mem: mem}
}

// counter is the commit counter; ok is false when there is no mapping.
func (c *commits) counter() (uint32, bool) {
	if c == nil {
		return 0, false
	}
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&c.mem[8]))), true
}

func (c *commits) close() {
	if c != nil {
		syscall.Munmap(c.mem)
	}
}
