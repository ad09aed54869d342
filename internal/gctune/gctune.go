// Package gctune sets the Go garbage collector of `aivis serve` for a
// server's work: a heap that may grow to three times what is live
// (GOGC=200, where Go's default is 100) and, in a container with a memory
// limit, a soft limit below it that makes the collector work harder
// before the limit is reached. Either is left to the operator when its
// variable (GOGC, GOMEMLIMIT) is set.
//
// Measured through the binary (docs/benchmarks.md): at GOGC=100 the
// collector took about an eighth of the server's CPU on the event path;
// at 200 a delivery costs 12% less CPU and the server's throughput rises
// as much, for a larger heap (docs/operations.md).
package gctune

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Percent is the GOGC that aivis serve runs with unless GOGC is set.
const Percent = 200

// LimitShare is the share of a container's memory limit that becomes the
// collector's soft limit (GOMEMLIMIT) unless GOMEMLIMIT is set.
const LimitShare = 0.9

// Settings is what Apply chose and why: "default", "GOGC", "GOMEMLIMIT",
// "cgroup" or "none".
type Settings struct {
	Percent     int
	PercentFrom string
	Limit       int64 // bytes; 0: none
	LimitFrom   string
}

// Apply sets the collector: GOGC=Percent unless the environment sets
// GOGC; a soft memory limit of LimitShare of the cgroup's (v2) memory.max
// unless the environment sets GOMEMLIMIT or there is no finite limit.
// cgroupRoot is where the cgroup file system is mounted (/sys/fs/cgroup),
// and selfCgroup the process's cgroup file (/proc/self/cgroup).
func Apply(getenv func(string) string, cgroupRoot, selfCgroup string) Settings {
	s := Settings{Percent: -1, PercentFrom: "GOGC", LimitFrom: "GOMEMLIMIT"}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(Percent)
		s.Percent, s.PercentFrom = Percent, "default"
	} else {
		s.Percent = debug.SetGCPercent(-1) // read it: set it back at once
		debug.SetGCPercent(s.Percent)
	}
	if getenv("GOMEMLIMIT") != "" {
		s.Limit = debug.SetMemoryLimit(-1)
		return s
	}
	s.LimitFrom = "none"
	if max := cgroupLimit(cgroupRoot, selfCgroup); max > 0 {
		s.Limit, s.LimitFrom = int64(float64(max)*LimitShare), "cgroup"
		debug.SetMemoryLimit(s.Limit)
	}
	return s
}

// cgroupLimit is the memory.max of the process's cgroup (v2), or 0 when
// there is none, it is "max", or it cannot be read.
func cgroupLimit(root, self string) int64 {
	dir := ""
	if f, err := os.Open(self); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// cgroup v2's line: "0::/the/path".
			if path, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
				dir = path
			}
		}
		f.Close()
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.Clean("/"+dir), "memory.max"))
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0 // "max": no limit
	}
	return n
}
