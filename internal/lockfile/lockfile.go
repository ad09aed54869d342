// Package lockfile takes exclusive locks on files (flock) for the
// processes that share a data directory. A lock belongs to the open file
// that took it and the kernel lets it go when that file is closed or its
// process ends, however it ends: a lock another process can take is one no
// live process holds.
package lockfile

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// Open opens (making it if needed) the file whose lock is taken.
func Open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
}

// Try takes f's lock without waiting: false, with no error, when another
// open file holds it.
func Try(f *os.File) (bool, error) {
	err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// Wait takes f's lock, waiting for as long as another open file holds it
// (in the kernel, not by polling), or until ctx ends. Then f is closed and
// ctx's error returned: a lock the wait takes after that is let go at once,
// as f's descriptor closes when the wait returns.
func Wait(ctx context.Context, f *os.File) error {
	got := make(chan error, 1)
	go func() { got <- flock(f, syscall.LOCK_EX) }()
	select {
	case err := <-got:
		return err
	case <-ctx.Done():
		f.Close()
		return ctx.Err()
	}
}

// flock locks f's descriptor, which stays open while the call runs even if
// f is closed meanwhile (it is closed once the call returns).
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if ferr = syscall.Flock(int(fd), how); ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
