// Package buildinfo is what a build of aivis says of itself: the version,
// commit and build time `make build` stamps in (-ldflags -X), else what the
// Go toolchain recorded (the module's version, the VCS revision and time),
// and the Go version.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// Stamped by the linker: -X github.com/aivis/aivis/internal/buildinfo.version=v1.2.3
// (and commit, date).
var version, commit, date string

// Info is one build's identity.
type Info struct {
	Version   string // v1.2.3, or a git describe; "(devel)" when nothing said
	Commit    string // the VCS revision; "" when unknown
	Date      string // the build's (or the commit's) time, RFC 3339; "" when unknown
	GoVersion string
}

// String is the one line `aivis version` prints.
func (i Info) String() string {
	s := "aivis " + i.Version
	if i.Commit != "" {
		s += " (commit " + i.Commit
		if i.Date != "" {
			s += ", " + i.Date
		}
		s += ")"
	}
	return s + " " + i.GoVersion
}

// Get is this build's identity.
var Get = sync.OnceValue(func() Info {
	i := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if i.Version == "" {
			i.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && i.Commit == "":
				i.Commit = s.Value
			case s.Key == "vcs.time" && i.Date == "":
				i.Date = s.Value
			}
		}
	}
	if i.Version == "" {
		i.Version = "(devel)"
	}
	return i
})
