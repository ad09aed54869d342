package app

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/internal/lockfile"
)

// APILockFile is the file in the data directory whose lock the process
// serving the API holds when its counter's counts are its own.
const APILockFile = "api.lock"

// apiTurn is whether, and when, this process serves the API. Any number of
// processes may run on one data directory (work is claimed in the store),
// but the rate limits stay exact only if every process that serves the API
// counts each request where the others see it. The rule:
//
//   - api false: never; the process runs the workers alone.
//   - a counter whose counts every process shares exactly (Shared): at
//     once; every such process serves.
//   - a counter whose counts are its process's (the memory counter): only
//     while the process holds the exclusive lock (flock) on
//     <data-dir>/api.lock. A process that finds it held is a standby: it
//     runs the workers and waits for the lock, which the kernel lets go when
//     its holder ends, however it ends; then it serves, with a counter made
//     then from the counts the holder wrote behind (all of them after a
//     graceful stop, which lets the lock go only after its last flush; at
//     most one flush interval short after a crash).
type apiTurn struct {
	standby bool     // the lock is another's: wait for it
	lock    *os.File // held, or waited for by a standby; nil without
}

// takeAPI applies the rule: it takes the lock if the rule asks for it and
// no other process holds it.
func takeAPI(cfg config.Config, shared bool) (apiTurn, error) {
	if !cfg.API || shared {
		return apiTurn{}, nil
	}
	f, err := lockfile.Open(filepath.Join(cfg.DataDir, APILockFile))
	if err != nil {
		return apiTurn{}, fmt.Errorf("api lock: %w", err)
	}
	held, err := lockfile.Try(f)
	if err != nil {
		f.Close()
		return apiTurn{}, fmt.Errorf("api lock: %w", err)
	}
	return apiTurn{standby: !held, lock: f}, nil
}

// release lets the lock go, if any (again: a no-op).
func (t apiTurn) release() {
	if t.lock != nil {
		t.lock.Close()
	}
}
