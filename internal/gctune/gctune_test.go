package gctune

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// cgroup writes a cgroup v2 tree where the process's cgroup (path) has
// memory.max max, and returns its root and the process's cgroup file.
func cgroup(t *testing.T, path, max string) (root, self string) {
	root = t.TempDir()
	dir := filepath.Join(root, path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if max != "" {
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(max+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	self = filepath.Join(t.TempDir(), "cgroup")
	if err := os.WriteFile(self, []byte("0::"+path+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, self
}

// restore puts the collector's settings back when the test ends.
func restore(t *testing.T) {
	pct, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	})
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestApply(t *testing.T) {
	const gib = 1 << 30
	noLimit := int64(1<<63 - 1) // what SetMemoryLimit reads back when none is set
	for _, c := range []struct {
		name       string
		vars       map[string]string
		path, max  string
		want       Settings
		wantPct    int
		wantLimit  int64
		presetPct  int
		presetLims int64
	}{
		{"a container's limit: 90% of it, GOGC 200", nil, "/kubepods/pod1/c1", "2147483648",
			Settings{Percent: 200, PercentFrom: "memory limit", Limit: 9 * 2 * gib / 10, LimitFrom: "cgroup"}, 200, 9 * 2 * gib / 10, 100, noLimit},
		{"no limit (max): Go's defaults", nil, "/user.slice", "max",
			Settings{Percent: 100, PercentFrom: "default", LimitFrom: "none"}, 100, noLimit, 100, noLimit},
		{"no cgroup file: Go's defaults", nil, "/", "",
			Settings{Percent: 100, PercentFrom: "default", LimitFrom: "none"}, 100, noLimit, 100, noLimit},
		{"the operator's GOMEMLIMIT: GOGC 200 under it", map[string]string{"GOMEMLIMIT": "1GiB"}, "/", "",
			Settings{Percent: 200, PercentFrom: "memory limit", Limit: gib, LimitFrom: "GOMEMLIMIT"}, 200, gib, 100, gib},
		{"the operator's GOGC under a container's limit", map[string]string{"GOGC": "100"}, "/c", "1073741824",
			Settings{Percent: 100, PercentFrom: "GOGC", Limit: 9 * gib / 10, LimitFrom: "cgroup"}, 100, 9 * gib / 10, 100, noLimit},
		{"the operator's GOGC and GOMEMLIMIT are kept", map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}, "/c", "2147483648",
			Settings{Percent: 50, PercentFrom: "GOGC", Limit: gib, LimitFrom: "GOMEMLIMIT"}, 50, gib, 50, gib},
	} {
		t.Run(c.name, func(t *testing.T) {
			restore(t)
			// The runtime read GOGC and GOMEMLIMIT at start: as if it had.
			debug.SetGCPercent(c.presetPct)
			debug.SetMemoryLimit(c.presetLims)
			root, self := cgroup(t, c.path, c.max)
			got := Apply(env(c.vars), root, self)
			if got != c.want {
				t.Errorf("Apply = %+v, want %+v", got, c.want)
			}
			pct := debug.SetGCPercent(-1) // read, and set back at once
			debug.SetGCPercent(pct)
			if pct != c.wantPct {
				t.Errorf("GC percent %d, want %d", pct, c.wantPct)
			}
			if limit := debug.SetMemoryLimit(-1); limit != c.wantLimit {
				t.Errorf("memory limit %d, want %d", limit, c.wantLimit)
			}
		})
	}
}
