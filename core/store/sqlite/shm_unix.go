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
// database, which it tells by a lock that every process with the database
// open holds on the file. POSIX releases all of a process's locks on a file
// when the process closes any descriptor of it, so the descriptor opened
// here stays open until SQLite's own connections are closed: closing it
// earlier would let the next process to open the database (the CLI) take
// itself for the first and reset the WAL index under this one.
type commits struct {
	file *os.File
	mem  []byte
}

func watchCommits(dbPath string) *commits {
	f, err := os.Open(dbPath + "-shm")
	if err != nil {
		return nil
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return &commits{file: f} // kept open all the same: see above
	}
	return &commits{file: f, mem: mem}
}

// counter is the commit counter; ok is false when there is no mapping.
func (c *commits) counter() (uint32, bool) {
	if c == nil || c.mem == nil {
		return 0, false
	}
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&c.mem[8]))), true
}

// close releases the mapping and the descriptor; it is called once every
// connection of this process to the database is closed.
func (c *commits) close() {
	if c == nil {
		return
	}
	if c.mem != nil {
		syscall.Munmap(c.mem)
	}
	c.file.Close()
}
