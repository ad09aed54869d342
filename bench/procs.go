package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The CPU time of processes other than the benchmark's own: the aivis
// processes it starts and the servers they use (PostgreSQL, NATS, Redis),
// read from /proc/<pid>/stat, so that a phase's cost can be split between
// aivis, each server and the benchmark's generator and receiver.

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on
// Linux whatever the kernel's own tick).
const clockTick = 10 * time.Millisecond

// procStat is what /proc/<pid>/stat says of a process's CPU time: its own
// (user and system) and that of its children it has waited for.
type procStat struct {
	ppid         int
	self, reaped time.Duration
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name, in parentheses, may hold spaces: the fields are
	// those after its closing parenthesis, from the state (field 3) on.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	tick := func(k int) time.Duration { return time.Duration(n(k)) * clockTick }
	return procStat{ppid: int(n(4)), self: tick(14) + tick(15), reaped: tick(16) + tick(17)}, nil
}

// cpuSource is a process, or a group of them, whose CPU time a meter
// reads.
type cpuSource struct {
	name string
	cpu  func() time.Duration
}

// pidCPU is the CPU time of one process and of the children it reaped.
func pidCPU(pid int) func() time.Duration {
	return func() time.Duration {
		s, _ := readStat(pid)
		return s.self + s.reaped
	}
}

// pgCPU is the CPU time of a PostgreSQL server's processes that work for
// the database db: its postmaster (and the backends it reaped), its
// auxiliary processes (WAL writer, checkpointer, background writer,
// autovacuum), which work for every database, and the backends connected
// to db. Backends of other databases, other users' on a shared server,
// are left out while they run.
func pgCPU(postmaster int, db string) func() time.Duration {
	return func() time.Duration {
		s, _ := readStat(postmaster)
		total := s.self + s.reaped
		for _, pid := range pids() {
			c, err := readStat(pid)
			if err != nil || c.ppid != postmaster {
				continue
			}
			// A backend's title: "postgres: 15/main: user database
			// host(port) state" (or without the "15/main: " part).
			title, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			f := strings.Fields(strings.TrimPrefix(string(bytes.TrimRight(title, "\x00")), "postgres: "))
			if len(f) > 0 && strings.HasSuffix(f[0], ":") {
				f = f[1:]
			}
			backend := len(f) >= 3 && strings.Contains(f[2], "(")
			if !backend || f[1] == db {
				total += c.self + c.reaped
			}
		}
		return total
	}
}

func pids() []int {
	ents, _ := os.ReadDir("/proc")
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// listener finds the process listening on the TCP port of a server's
// URL, on this machine: the socket's inode from /proc/net/tcp{,6}, then
// the process holding it.
func listener(serverURL string) (int, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return 0, err
	}
	_, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", u.Redacted(), err)
	}
	p, _ := strconv.Atoi(port)
	want := fmt.Sprintf(":%04X", p)
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st ... inode (field 10)
			fs := strings.Fields(sc.Text())
			if len(fs) > 9 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" {
				inodes["socket:["+fs[9]+"]"] = true
			}
		}
		f.Close()
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("no process listens on port %d", p)
	}
	for _, pid := range pids() {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		for _, fd := range fds {
			if target, err := os.Readlink(fd); err == nil && inodes[target] {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process found holding the socket of port %d (reading other users' /proc/<pid>/fd needs root)", p)
}

// meter reads the CPU time of the benchmark's process and of its
// sources.
type meter []cpuSource

// sample is what each source, the benchmark's process first, has used so
// far.
func (m meter) sample() []time.Duration {
	out := []time.Duration{cpuTime()}
	for _, s := range m {
		out = append(out, s.cpu())
	}
	return out
}

// spent is what each used between two samples, by name ("bench" for the
// benchmark's own process).
func (m meter) spent(from, to []time.Duration) procCPU {
	out := procCPU{{"bench", to[0] - from[0]}}
	for i, s := range m {
		out = append(out, namedCPU{s.name, to[i+1] - from[i+1]})
	}
	return out
}

type namedCPU struct {
	name string
	cpu  time.Duration
}

// procCPU is the CPU time each process (or group) used over a phase.
type procCPU []namedCPU

// get is a source's time, summed over sources that share the name.
func (p procCPU) get(name string) time.Duration {
	var d time.Duration
	for _, c := range p {
		if c.name == name {
			d += c.cpu
		}
	}
	return d
}

// per is each source's time per unit of work (µs), in the meter's order,
// as "name µs" pairs.
func (p procCPU) per(n int) string {
	if n == 0 {
		return "–"
	}
	var parts []string
	for _, c := range p {
		parts = append(parts, fmt.Sprintf("%s %.0f", c.name, float64(c.cpu.Microseconds())/float64(n)))
	}
	return strings.Join(parts, ", ")
}
