// Package gctune sets the Go garbage collector of `aivis serve` where
// its memory is bounded: in a container with a memory limit (cgroup v2's
// memory.max), a soft limit of 90% of it (GOMEMLIMIT), and with a soft
// limit, from there or from GOMEMLIMIT, a heap that may grow to three
// times what is live (GOGC=200, where Go's default is 100) before a
// collection. Near the soft limit the collector runs as often as it must,
// so the larger heap costs no out-of-memory kill; without any limit the
// collector keeps Go's defaults, and the server's memory stays what it
// was. GOGC and GOMEMLIMIT, when set, are the operator's and kept.
//
// Measured through the binary (docs/benchmarks.md): at GOGC=100 the
// collector took about an eighth of the server's CPU on the event path;
// at 200 a delivery cost 14-21% less CPU in three paired runs, and the
// peak memory of the memory benchmark rose from 137 to 179 MB
// (docs/operations.md).
package gctune

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Percent is the GOGC that aivis serve runs with under a soft memory
// limit unless GOGC is set.
const Percent = 200

// LimitShare is the share of a container's memory limit that becomes the
// collector's soft limit (GOMEMLIMIT) unless GOMEMLIMIT is set.
const LimitShare = 0.9

// Settings is what Apply chose and why: the percent from "GOGC", "memory
// limit" or "default" (Go's, 100); the limit from "GOMEMLIMIT", "cgroup"
// or "none".
type Settings struct {
	Percent     int
	PercentFrom string
	Limit       int64 // bytes; 0: none
	LimitFrom   string
}

// Apply sets the collector: a soft memory limit of LimitShare of the
// cgroup's (v2) memory.max unless the environment sets GOMEMLIMIT or
// there is no finite limit; then, under a soft limit (either) and unless
// the environment sets GOGC, GOGC=Percent. cgroupRoot is where the cgroup
// file system is mounted (/sys/fs/cgroup), and selfCgroup the process's
// cgroup file (/proc/self/cgroup).
func Apply(getenv func(string) string, cgroupRoot, selfCgroup string) Settings {
	s := Settings{LimitFrom: "GOMEMLIMIT"}
	if getenv("GOMEMLIMIT") != "" {
		s.Limit = debug.SetMemoryLimit(-1)
	} else if max := cgroupLimit(cgroupRoot, selfCgroup); max > 0 {
		s.Limit, s.LimitFrom = int64(float64(max)*LimitShare), "cgroup"
		debug.SetMemoryLimit(s.Limit)
	} else {
		s.LimitFrom = "none"
	}
	switch {
	case getenv("GOGC") != "":
		s.PercentFrom = "GOGC"
		s.Percent = debug.SetGCPercent(-1) // read it, and set it back at once
		debug.SetGCPercent(s.Percent)
	case s.Limit > 0:
		s.Percent, s.PercentFrom = Percent, "memory limit"
		debug.SetGCPercent(Percent)
	default:
		s.Percent, s.PercentFrom = 100, "default"
		debug.SetGCPercent(100)
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
